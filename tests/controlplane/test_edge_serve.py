"""``lakeshore serve`` with its TLS edge processes (``--tls-processes``): a real
server on 127.0.0.1 with a certificate the test makes.

* ``--tls-processes 1`` starts one edge, ``LAKESHORE_TLS_PROCESSES=2`` two, the
  default none (TLS on the event loop, as before); requests see ``https`` either way.
* Only the server's own edges may relay: another process on its Unix socket,
  claiming a client, is closed unanswered.
* SIGTERM drains through the edges: a held long-poll over TLS is answered 503 with
  a ``Retry-After``, then the server and its edges end.
* The flag is in ``--help`` and a negative count is refused.

The daemon-certificate tests (``test_daemon_certs.py``), the TLS serving and reload
tests (``test_tls_serving.py``) and the proxy and failover tests pass through the
edges too (run with the default at 2 while they were built).
"""

from __future__ import annotations

import http.client
import signal
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from dreamlake.controlplane.server.edge import wire
from dreamlake.controlplane.server.fleet.shedding import RETRY_RESTART
from lakeshore_fixtures import clean_env, lakeshore_argv, wait_until
from test_tls_serving import Pki, TlsServer, _pki, _serve, _stop

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return _pki(tmp_path_factory.mktemp("pki"), ["localhost", "127.0.0.1"])


def _server(tmp: Path, pki: Pki, *extra: str, env: dict[str, str] | None = None) -> TlsServer:
    return _serve(tmp, "--tls-cert", str(pki.cert), "--tls-key", str(pki.key), *extra,
                  ca=pki.ca, probe=False, env=env)  # fmt: skip


def _edges(pid: int) -> list[int]:
    """The server's edge processes."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"dreamlake.controlplane.server.edge" in argv:
                found.append(int(child))
    return found


def _get(server: TlsServer, pki: Pki, path: str) -> http.client.HTTPResponse:
    context = ssl.create_default_context(cafile=str(pki.ca))
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=30)
    conn.request("GET", path, headers={"Authorization": f"Bearer {server.admin_token}"})
    answer = conn.getresponse()
    answer.read()
    conn.close()
    return answer


def _location(server: TlsServer, pki: Pki) -> str:
    """Where a path with a trailing slash is redirected: built from the request's URL."""
    answer = _get(server, pki, "/api/namespaces/")
    assert answer.status == 307
    return str(answer.getheader("location"))


@pytest.fixture(scope="module")
def one_edge(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[TlsServer]:
    server = _server(tmp_path_factory.mktemp("one-edge"), pki, "--tls-processes", "1")
    yield server
    _stop(server)


def test_one_edge_serves_https(one_edge: TlsServer, pki: Pki) -> None:
    assert len(_edges(one_edge.proc.pid)) == 1
    assert _location(one_edge, pki) == f"https://127.0.0.1:{one_edge.port}/api/namespaces"
    client = Client(one_edge.url, one_edge.admin_token, ca=str(pki.ca), timeout=30)
    assert client.whoami()["admin"] is True


def test_by_default_none_and_the_loop_does_tls(tmp_path: Path, pki: Pki) -> None:
    server = _server(tmp_path, pki)
    try:
        assert _edges(server.proc.pid) == []
        assert _location(server, pki) == f"https://127.0.0.1:{server.port}/api/namespaces"
        client = Client(server.url, server.admin_token, ca=str(pki.ca), timeout=30)
        assert client.whoami()["admin"] is True
    finally:
        _stop(server)


def _relay_address(pid: int) -> str:
    for line in Path("/proc/net/unix").read_text().splitlines():
        name = line.split()[-1]
        if name.startswith(f"@lakeshore-edge-{pid}-"):
            return "\0" + name[1:]
    raise AssertionError("no relay socket")


def test_only_the_servers_own_edges_may_relay(one_edge: TlsServer) -> None:
    forger = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    forger.settimeout(30)
    forger.connect(_relay_address(one_edge.proc.pid))
    claim = wire.encode(("10.0.0.9", 4444), ("127.0.0.1", one_edge.port), b"\x30\x03\x02\x01\x01")
    answer = b""
    try:
        forger.sendall(claim + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = forger.recv(65536)
    except (BrokenPipeError, ConnectionResetError):
        pass
    forger.close()
    assert answer == b""  # closed, unanswered
    assert wait_until(lambda: "not an edge" in one_edge.output(), 30)


def test_sigterm_drains_through_the_edges(tmp_path: Path, pki: Pki) -> None:
    server = _server(tmp_path, pki, env={"LAKESHORE_TLS_PROCESSES": "2"})
    assert wait_until(lambda: len(_edges(server.proc.pid)) == 2, 30)  # the variable
    edges = _edges(server.proc.pid)
    try:
        admin = Client(server.url, server.admin_token, ca=str(pki.ca), timeout=30)
        worker = admin.register("drain", "i-1")["workerId"]
        assert admin.poll_work(worker, wait=0) is None
        answers: dict[str, Any] = {}

        def hold() -> None:
            try:
                answers["poll"] = admin.sibling().poll_work(worker, wait=50)
            except Exception as exc:
                answers["poll"] = exc

        poll = threading.Thread(target=hold, daemon=True)
        poll.start()

        def held() -> bool:
            context = ssl.create_default_context(cafile=str(pki.ca))
            conn = http.client.HTTPSConnection(
                "127.0.0.1", server.port, context=context, timeout=30
            )
            conn.request(
                "GET", "/metrics", headers={"Authorization": f"Bearer {server.admin_token}"}
            )
            text = conn.getresponse().read().decode()
            conn.close()
            return "lakeshore_long_polls_held 1.0" in text

        assert wait_until(held, 60)
        server.proc.send_signal(signal.SIGTERM)
        poll.join(60)
        shed = answers["poll"]
        assert isinstance(shed, ApiFailure) and shed.status == 503, shed
        assert shed.retry_after is not None
        assert RETRY_RESTART[0] <= shed.retry_after <= RETRY_RESTART[1]
        assert server.proc.wait(60) in (0, -signal.SIGTERM), server.output()
        assert wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in edges), 30)
    finally:
        _stop(server)


def test_the_flag_is_documented_and_checked() -> None:
    helped = subprocess.run([*lakeshore_argv(), "serve", "--help"], capture_output=True,
                            text=True, env=clean_env(COLUMNS="200"), timeout=60)  # fmt: skip
    assert "--tls-processes" in helped.stdout and "LAKESHORE_TLS_PROCESSES" in helped.stdout
    refused = subprocess.run([*lakeshore_argv(), "serve", "--tls-processes", "-1"],
                             capture_output=True, text=True, env=clean_env(), timeout=60)  # fmt: skip
    assert refused.returncode != 0
    assert "--tls-processes must be 0" in refused.stderr


def test_the_deploy_page_shows_the_flag_as_serve_takes_it() -> None:
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "deploy.md").read_text()
    section = page.split("## Handshakes off the event loop (`--tls-processes`)")[1].split("\n## ")[
        0
    ]
    example = next(line for line in section.splitlines() if line.startswith("lakeshore serve"))
    helped = subprocess.run([*lakeshore_argv(), "serve", "--help"], capture_output=True,
                            text=True, env=clean_env(COLUMNS="200"), timeout=60).stdout  # fmt: skip
    for flag in (word for word in example.split() if word.startswith("--")):
        assert flag in helped, flag
    assert "LAKESHORE_TLS_PROCESSES" in section
    assert "`LAKESHORE_TLS_PROCESSES`" in (root / "docs" / "controlplane.md").read_text()
    bench = subprocess.run([sys.executable, str(root / "benchmarks" / "fleet_daemons.py"), "--help"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "--tls-processes" in bench.stdout
