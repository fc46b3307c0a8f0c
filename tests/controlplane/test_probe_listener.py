"""The probe listener (``lakeshore serve --probe-port``): ``/healthz`` and ``/readyz``
on a port of their own, served off the event loop, with the main port's documents."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.server import health
from lakeshore_fixtures import ServerProc, free_port, lakeshore_argv


def _get(url: str, method: str = "GET") -> tuple[int, str, bytes]:
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[health.ProbeListener]:
    from dreamlake.controlplane.server.app import create_app
    from dreamlake.controlplane.server.settings import Settings

    app = create_app(Settings.from_env(data_dir=tmp_path / "data"))
    probes = health.ProbeListener(app, "127.0.0.1", 0).start()
    try:
        yield probes
    finally:
        probes.stop()
        app.state.engine.dispose()


def test_healthz_and_readyz_answer_on_the_probe_port(listener: health.ProbeListener) -> None:
    base = f"http://127.0.0.1:{listener.port}"
    status, kind, body = _get(base + "/healthz")
    assert (status, kind) == (200, "application/json")
    assert json.loads(body) == health.healthy(listener.app)
    assert json.loads(body)["database"] == "sqlite"
    status, kind, body = _get(base + "/readyz?verbose=1")
    assert (status, json.loads(body)["status"]) == (200, "ready")
    status, _, body = _get(base + "/healthz", method="HEAD")
    assert (status, body) == (200, b"")


def test_anything_else_is_a_404_problem(listener: health.ProbeListener) -> None:
    status, kind, body = _get(f"http://127.0.0.1:{listener.port}/api/whoami")
    assert (status, kind) == (404, "application/problem+json")
    assert json.loads(body)["error"] == "not_found"


def test_readyz_is_503_when_the_database_does_not_answer(
    listener: health.ProbeListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(engine: Any) -> None:
        raise ConnectionRefusedError("postgresql://user:secret@db/x refused")

    monkeypatch.setattr(health, "_select_one", down)
    status, kind, body = _get(f"http://127.0.0.1:{listener.port}/readyz")
    assert (status, kind) == (503, "application/problem+json")
    out = json.loads(body)
    assert out["error"] == "unavailable"
    assert out["detail"] == "database unreachable (ConnectionRefusedError)"  # no URL, no secret


def test_a_probe_that_never_sends_its_request_does_not_hold_the_others(
    listener: health.ProbeListener,
) -> None:
    with socket.create_connection(("127.0.0.1", listener.port)) as idle:
        idle.sendall(b"GET /hea")  # and nothing more
        started = time.monotonic()
        assert _get(f"http://127.0.0.1:{listener.port}/healthz")[0] == 200
        # answered beside the stalled one, not after its PROBE_TIMEOUT ran out
        assert time.monotonic() - started < health.PROBE_TIMEOUT / 2


def test_a_real_server_serves_the_probes_on_both_ports(
    start_server: Callable[..., ServerProc],
) -> None:
    probe = free_port()
    s = start_server(extra=["--probe-port", str(probe)])
    main = _get(s.url + "/healthz")
    side = _get(f"http://127.0.0.1:{probe}/healthz")
    assert main[0] == side[0] == 200 and main[2] == side[2]  # the same bytes
    assert _get(f"http://127.0.0.1:{probe}/readyz")[0] == 200


def test_a_busy_probe_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        proc = subprocess.run(
            [
                *lakeshore_argv(),
                "serve",
                "--port",
                str(free_port()),
                "--probe-port",
                str(busy),
                "--data-dir",
                str(tmp_path / "data"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode != 0
    assert f"cannot serve the probes on 127.0.0.1:{busy}" in proc.stderr
    assert "--probe-port" in proc.stderr and "Traceback" not in proc.stderr


def test_the_probe_port_cannot_be_the_main_port(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.run(
        [*lakeshore_argv(), "serve", "--port", str(port), "--probe-port", str(port)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0 and "--probe-port must be" in proc.stderr, proc.stderr
