"""The fleet benchmark's ``--tls`` mode (benchmarks/fleet_daemons.py): the server it
starts serves HTTPS with the certificate the benchmark makes, each daemon enrols as
``nymph`` does at its first start (a bootstrap token exchanged by the daemon's own
``Credentials`` for a client certificate) and then works by that certificate alone;
a replayed churn fleet, which writes plain-HTTP requests, is refused with the flag
that runs the daemons themselves."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from fleet_daemons import Server, enrol, make_pki

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

pytestmark = pytest.mark.slow


def test_tls_with_a_replayed_churn_fleet_is_refused_before_anything_starts() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH / "fleet_daemons.py"), "--tls", "--model", "churn", "-n", "10"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert out.returncode == 1
    assert "--churn-load daemons" in out.stderr and "Traceback" not in out.stderr


def test_a_daemon_enrols_and_then_works_by_its_certificate(tmp_path: Path) -> None:
    from cryptography.fernet import Fernet
    from dreamlake.controlplane.nymph.daemon import Daemon, DaemonConfig

    pki = make_pki(tmp_path / "pki")
    env = {"LAKESHORE_SECRET_KEY": Fernet.generate_key().decode()}
    server = Server(None, tmp_path / "s0", env, pki=pki).start()
    try:
        assert server.url.startswith("https://127.0.0.1:")
        token = (tmp_path / "s0" / "admin.token").read_text().strip()
        ca = str(pki / "ca.crt")
        cfg: dict[str, Any] = {"urls": [server.url], "token": token, "ca": ca,
                               "certs": str(tmp_path / "certs")}  # fmt: skip
        clients = {i: Client(server.url, None, keep_alive=True, ca=ca) for i in (0, 1)}
        names = {0: ("p0", "host-0"), 1: ("p1", "host-1")}
        creds, cost = enrol(cfg, clients, names)
        assert cost["enrolled"] == 2 and cost["failures"] == {}
        for i, c in clients.items():
            assert c.token is None and c.cert == str(
                tmp_path / "certs" / f"host-{i}" / "daemon.pem"
            )
        config = DaemonConfig("p1", [], "d1", "host-1", "bench", poll_wait=5.0)
        daemon = Daemon(clients[1], config, credentials=creds[1])
        threads = daemon.start()
        admin = Client(server.url, token, ca=ca)
        deadline = time.monotonic() + 60
        while not admin.workers("p1"):
            assert time.monotonic() < deadline, "the enrolled daemon did not register"
            time.sleep(0.1)
        assert admin.whoami()["admin"] is True
        assert daemon.client.token is None  # its certificate, no bearer token
        daemon.shutdown(threads)
    finally:
        server.stop()
