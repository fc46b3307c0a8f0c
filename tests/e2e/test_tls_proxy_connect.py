"""``connect`` behind a TLS-terminating proxy (docs/deploy.md, way 3): a real
``lakeshore serve`` on plain HTTP on 127.0.0.1, the tests' TLS proxy
(tests/tls_proxy.py) in front of it, a ``local`` provider applied with real
terraform and its daemon under tmux. The URL is ``https://``, but the server behind
the proxy signs no certificates, so connect's one mint hands the host a daemon
token (not a bootstrap token it could never spend); the daemon's certificate
request is answered 409 through the proxy, and it claims and works by its bearer
token, every request through the proxy."""

from __future__ import annotations

import shutil
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from applied_local import applied_local, point_at
from dreamlake.controlplane.client import Client
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.demo import EmbeddedServer
from tls_proxy import TLSProxy

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="needs tmux (apt-get install -y tmux)"
)


@pytest.fixture
def proxy(lakeshore_server: EmbeddedServer, tmp_path: Path) -> Iterator[TLSProxy]:
    """The tests' TLS-terminating proxy in front of the session's plain-HTTP server."""
    upstream = urllib.parse.urlsplit(lakeshore_server.url)
    assert upstream.scheme == "http" and upstream.port is not None
    with TLSProxy((upstream.hostname or "127.0.0.1", upstream.port), tmp_path / "proxy") as p:
        yield p


def test_a_daemon_behind_a_tls_terminating_proxy_claims_by_its_daemon_token(
    lakeshore_server: EmbeddedServer,
    proxy: TLSProxy,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    point_at(monkeypatch, tmp_path, proxy.url, proxy.ca, lakeshore_server.admin_token_file)
    admin_token = lakeshore_server.admin_token_file.read_text().strip()
    admin = Client(proxy.url, admin_token, ca=str(proxy.ca))
    name, workdir, key, folder = applied_local(project, tmp_path, "px", ("applied", "unclaimed"))
    try:
        res = connect(name, cwd=project, watch=60)
        assert res.status == "connected", (res, res.notes)
        # one mint, a daemon token: no bootstrap token was minted for the host
        rows = [
            t
            for t in admin.request("GET", "/api/tokens", query={"revoked": "true"})
            if t.get("provider") == name
        ]
        assert [(t["scope"], t["revokedAt"]) for t in rows] == [("daemon", None)], rows
        held = (folder / "token").read_text().strip()
        daemon = Client(proxy.url, held, ca=str(proxy.ca))
        assert daemon.whoami() == {
            "admin": False,
            "namespace": "default",
            "scope": "daemon",
            "provider": name,
        }
        # the daemon verifies the proxy with the CA connect installed, asked for a
        # certificate (409 through the proxy) and goes on by its token
        assert (folder / "ca.crt").read_bytes() == proxy.ca.read_bytes()
        assert not (folder / "daemon.pem").exists()
        log = _daemon_log(folder, "authenticating with the bearer token")
        assert "409" in log, log
        # work reaches it through the proxy (its long-poll held there)
        item = admin.submit_work(name, "echo behind-the-proxy > proxied.txt", queue="default")
        done = admin.get_work(str(item["id"]), wait=30)
        assert done["state"] == "succeeded", done
        assert (workdir / "proxied.txt").read_text() == "behind-the-proxy\n"
        assert proxy.connections >= 3  # connect's, the daemon's, this test's
    finally:
        supervise.stop(LocalShell(), key)


def _daemon_log(folder: Path, line: str, wait: float = 30.0) -> str:
    """The daemon's log once it says ``line`` (its log may lag its claim)."""
    end = time.monotonic() + wait
    text = ""
    while time.monotonic() < end:
        text = "".join(
            p.read_text(errors="replace") for p in sorted(folder.glob("*.log")) if p.is_file()
        )
        if line in text:
            return text
        time.sleep(0.2)
    raise AssertionError(f"the daemon's log never said {line!r}:\n{text[-2000:]}")
