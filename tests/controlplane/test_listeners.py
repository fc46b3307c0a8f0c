"""``lakeshore serve`` listens on its port with a group of sockets (SO_REUSEPORT),
so a turn of the event loop takes a connection from each: a fleet that opens a
connection per request does not outrun a loop that waits for the interpreter lock.
A port something else holds is refused, never shared."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from dreamlake.controlplane.server.fleet.serving import ListenError, listening_sockets
from dreamlake.controlplane.server.settings import DEFAULT_LISTENERS, Settings
from lakeshore_fixtures import ServerProc, clean_env, free_port, lakeshore_argv, tcp_table

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="needs Linux: SO_REUSEPORT groups and the kernel's table in /proc/net/tcp",
)


def _listening_on(port: int) -> int:
    """How many sockets listen on ``port`` (the kernel's own table)."""
    return sum(1 for f in tcp_table() if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port)


def test_a_group_of_listeners_shares_one_port_and_the_connections() -> None:
    group = listening_sockets("127.0.0.1", 0, 4, 128)
    try:
        port = group[0].getsockname()[1]
        assert [s.getsockname()[1] for s in group] == [port] * 4
        assert all(s.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) for s in group)
        assert _listening_on(port) == 4
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(64)]
        taken = []
        for s in group:
            s.setblocking(False)
            n = 0
            while True:
                try:
                    conn, _ = s.accept()
                except BlockingIOError:
                    break
                conn.close()
                n += 1
            taken.append(n)
        for c in clients:
            c.close()
        assert sum(taken) == 64
        assert sum(1 for n in taken if n) > 1  # spread by the kernel, not all on one
    finally:
        for s in group:
            s.close()


def test_a_port_already_taken_is_refused_not_joined() -> None:
    with socket.create_server(("127.0.0.1", 0)) as plain:
        port = plain.getsockname()[1]
        with pytest.raises(ListenError, match=f"cannot listen on 127.0.0.1:{port}"):
            listening_sockets("127.0.0.1", port, 4, 128)
    first = listening_sockets("127.0.0.1", 0, 2, 128)
    try:
        port = first[0].getsockname()[1]
        # another server's group (the same user, the same options) does not join it
        with pytest.raises(ListenError, match="in use"):
            listening_sockets("127.0.0.1", port, 2, 128)
        assert _listening_on(port) == 2
    finally:
        for s in first:
            s.close()


def test_the_number_of_listeners_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().listeners == DEFAULT_LISTENERS == 8
    monkeypatch.setenv("LAKESHORE_LISTENERS", "1")
    assert Settings.from_env().listeners == 1


def test_the_server_listens_with_the_group(
    start_server: Callable[..., ServerProc], shared_server_sqlite: ServerProc
) -> None:
    server = shared_server_sqlite  # default settings
    assert _listening_on(server.port) == DEFAULT_LISTENERS
    assert server.admin.healthz()["status"] == "ok"
    one = start_server(env={"LAKESHORE_LISTENERS": "1"})
    assert _listening_on(one.port) == 1
    assert one.admin.healthz()["status"] == "ok"


def test_serve_on_a_port_in_use_fails_with_a_next_action(tmp_path: Path) -> None:
    port = free_port()
    with socket.create_server(("127.0.0.1", port)):
        out = subprocess.run(
            [*lakeshore_argv(), "serve", "--port", str(port), "--data-dir", str(tmp_path)],
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert out.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr
    assert "lakeshore serve --port <a free port>" in out.stderr
