"""Nothing secret crosses the wire in clear text when lakeshore serves TLS: tcpdump
(Debian's, started by the test) captures the loopback interface while a real
``nymph`` spends its bootstrap token on a certificate, registers, runs work and
reports it, while the ``lakeshore`` CLI and an admin client call with bearer
tokens; the capture holds no ``Authorization`` header, no token, no certificate
request and not the work's command. The same capture of a plain-HTTP server does
show its token: the check can see what it looks for."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import Client
from lakeshore_fixtures import ServerProc, clean_env, lakeshore_argv, wait_until
from test_tls_serving import _pki, _serve, _stop

TCPDUMP = shutil.which("tcpdump") or (
    "/usr/bin/tcpdump" if Path("/usr/bin/tcpdump").exists() else None
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(TCPDUMP is None, reason="needs tcpdump (apt-get install tcpdump)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="capturing on lo needs root"),
]


class Capture:
    """tcpdump on ``lo`` for one port, written to a file."""

    def __init__(self, port: int, path: Path) -> None:
        self.path = path
        self.log = path.with_suffix(".log")
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                [str(TCPDUMP), "-i", "lo", "-U", "--immediate-mode", "-s", "0", "-w", str(path), f"tcp port {port}"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            )  # fmt: skip
        assert wait_until(lambda: b"listening on" in self.log.read_bytes(), 15), self.output()
        time.sleep(1.0)  # it says so a moment before its filter is in place

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> bytes:
        if self.proc.poll() is None:
            time.sleep(1.0)  # what is in flight reaches the file
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(15)
        return self.path.read_bytes()


def test_no_token_crosses_the_wire_in_clear_over_tls(
    tmp_path: Path, start_nymph: Callable[..., Any]
) -> None:
    pki = _pki(tmp_path / "pki", ["localhost", "127.0.0.1"])
    server = _serve(tmp_path, "--tls-cert", str(pki.cert), "--tls-key", str(pki.key),
                    ca=pki.ca, probe=False)  # fmt: skip
    capture = Capture(server.port, tmp_path / "tls.pcap")
    try:
        admin = Client(server.url, server.admin_token, namespace="wire", ca=str(pki.ca))
        admin.create_namespace("wire")
        boot = admin.create_token("wire", scope="bootstrap", provider="lab", host="h")
        start_nymph(server.url, boot, provider="lab", namespace="wire", queues="q",
                    extra=["--ca", str(pki.ca)])  # fmt: skip
        assert wait_until(lambda: bool(admin.workers("lab")), 60)
        item = admin.submit_work("lab", "echo wire-check-4711", queue="q")
        done = admin.get_work(item["id"], wait=30)
        assert done["state"] == "succeeded", done
        listed = subprocess.run(
            [*lakeshore_argv(), "namespaces", "list", "--server", server.url],
            env=clean_env(LAKESHORE_TOKEN=server.admin_token, LAKESHORE_CA=str(pki.ca)),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        wire = capture.stop()
    finally:
        capture.stop()
        _stop(server)
    assert len(wire) > 10_000, capture.output()  # the journey was captured
    for secret in (
        b"Authorization",
        b"Bearer",
        b"lks_",
        server.admin_token.encode(),
        boot.encode(),
        b"CERTIFICATE REQUEST",
        b"wire-check-4711",
    ):
        assert secret not in wire, f"{secret!r} crossed the wire in clear text"


def test_the_capture_sees_a_plain_servers_token(
    tmp_path: Path, shared_server_sqlite: ServerProc
) -> None:
    """The plain server: the session's shared one."""
    server = shared_server_sqlite
    capture = Capture(server.port, tmp_path / "plain.pcap")
    try:
        server.admin.list_namespaces()
        wire = capture.stop()
    finally:
        capture.stop()
    assert b"Authorization: Bearer " + server.admin_token.encode() in wire, capture.output()
