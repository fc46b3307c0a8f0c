"""``connect`` behind a TLS-terminating proxy that passes daemons' certificates on
(docs/deploy.md, way 3, "Daemons' certificates through the proxy"): a real
``lakeshore serve`` on plain HTTP on 127.0.0.1 with ``--client-cert-header
X-SSL-Client-Cert --trusted-proxy 127.0.0.1/32``, the tests' proxy in front asking
for client certificates and passing them on as nginx does, a ``local`` provider
applied with real terraform and its daemon under tmux. The server signs
certificates, so connect's one mint hands the host a bootstrap token; the daemon
spends it on its certificate through the proxy, and claims and works by that
certificate alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from applied_local import applied_local, point_at
from dreamlake.controlplane.client import Client
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.demo import EmbeddedServer
from sshd import free_port
from tls_proxy import TLSProxy

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="needs tmux (apt-get install -y tmux)"
)
HEADER = "X-SSL-Client-Cert"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedServer]:
    """``lakeshore serve`` on plain HTTP, taking daemons' certificates from the proxy."""
    data = tmp_path / "lakeshore"
    data.mkdir()
    port = free_port()
    argv = [sys.executable, "-m", "dreamlake.cli.lakeshore.app", "serve", "--port", str(port),
            "--data-dir", str(data), "--live-seconds", "2", "--client-cert-header", HEADER,
            "--trusted-proxy", "127.0.0.1/32"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
    with (data / "server.log").open("ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
    srv = EmbeddedServer(f"http://127.0.0.1:{port}", data, proc)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    end = time.monotonic() + 90
    while True:
        assert proc.poll() is None, srv.log_tail()
        try:
            with opener.open(srv.url + "/healthz", timeout=5) as answer:
                if answer.status == 200 and srv.admin_token_file.exists():
                    break
        except OSError:
            assert time.monotonic() < end, srv.log_tail()
            time.sleep(0.2)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def proxy(server: EmbeddedServer, tmp_path: Path) -> Iterator[TLSProxy]:
    """The tests' TLS-terminating proxy, passing daemons' certificates on in HEADER."""
    with TLSProxy(
        ("127.0.0.1", int(server.url.rsplit(":", 1)[1])), tmp_path / "proxy",
        client_cert_header=HEADER, client_ca=server.data_dir / "tls" / "client-ca.crt",
    ) as p:  # fmt: skip
        yield p


def test_a_daemon_behind_the_proxy_enrolls_and_claims_by_its_certificate(
    server: EmbeddedServer,
    proxy: TLSProxy,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    point_at(monkeypatch, tmp_path, proxy.url, proxy.ca, server.admin_token_file)
    admin = Client(proxy.url, server.admin_token_file.read_text().strip(), ca=str(proxy.ca))
    name, workdir, key, folder = applied_local(project, tmp_path, "pc", ("applied", "unclaimed"))
    try:
        res = connect(name, cwd=project, watch=60)
        assert res.status == "connected", (res, res.notes)
        # the daemon's certificate, asked for with the bootstrap token connect minted
        # (spent by it), passed on by the proxy on every request since
        end = time.monotonic() + 60
        while not (folder / "daemon.pem").exists():
            assert time.monotonic() < end, "the daemon never got its certificate"
            time.sleep(0.2)
        rows = [
            t
            for t in admin.request("GET", "/api/tokens", query={"revoked": "true"})
            if t.get("provider") == name
        ]
        assert sorted(t["scope"] for t in rows) == ["bootstrap", "daemon"], rows
        (boot,) = [t for t in rows if t["scope"] == "bootstrap"]
        (cert,) = [t for t in rows if t["scope"] == "daemon"]
        assert boot["revokedAt"] and cert["label"].startswith("cert ") and not cert["revokedAt"]
        item = admin.submit_work(name, "echo by-the-certificate > proxied.txt", queue="default")
        done = admin.get_work(str(item["id"]), wait=30)
        assert done["state"] == "succeeded", done
        assert (workdir / "proxied.txt").read_text() == "by-the-certificate\n"
        assert proxy.forwarded >= 2  # the daemon's requests, with its certificate
        logs = "".join(p.read_text(errors="replace") for p in folder.glob("*.log"))
        assert "authenticating with the bearer token" not in logs, logs
    finally:
        supervise.stop(LocalShell(), key)
