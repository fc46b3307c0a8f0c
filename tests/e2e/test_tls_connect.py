"""A ``local`` provider's journey with the control plane on TLS: real terraform, a
real ``lakeshore serve --tls-cert`` on 127.0.0.1, the daemon under tmux. ``connect``
hands the host a bootstrap token and the CA; the daemon spends the token on its
client certificate (key made on the host) and claims by it; work runs; ``destroy``
revokes the certificate."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from applied_local import applied_local, point_at
from dreamlake.controlplane.client import ApiFailure, Client
from dreamlake.controlplane.server.builtin_ca import issue_server, make_ca
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.destroy import destroy

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (apt-get install -y tmux)"),
]
BIN = Path(sys.executable).parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def tls_plane(tmp_path: Path) -> Iterator[dict[str, Any]]:
    pki = tmp_path / "pki"
    pki.mkdir()
    ca_pem, ca_key = make_ca("journey CA")
    cert, key = issue_server(ca_pem, ca_key, ["localhost", "127.0.0.1"])
    (pki / "ca.crt").write_bytes(ca_pem)
    (pki / "s.crt").write_bytes(cert)
    (pki / "s.key").write_bytes(key)
    (pki / "s.key").chmod(0o600)
    data, port = tmp_path / "data", _port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [str(BIN / "lakeshore"), "serve", "--port", str(port), "--data-dir", str(data),
         "--live-seconds", "2", "--tls-cert", str(pki / "s.crt"), "--tls-key", str(pki / "s.key")],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
    )  # fmt: skip
    url = f"https://127.0.0.1:{port}"
    end = time.monotonic() + 60
    while True:
        try:
            Client(url, ca=str(pki / "ca.crt"), timeout=2).healthz()
            break
        except Exception:
            assert proc.poll() is None and time.monotonic() < end, (
                tmp_path / "server.log"
            ).read_text()
            time.sleep(0.2)
    try:
        yield {"url": url, "ca": pki / "ca.crt", "token_file": data / "admin.token"}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
        log.close()


def test_a_local_journey_with_the_control_plane_on_tls(
    tls_plane: dict[str, Any], project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_at(monkeypatch, tmp_path, tls_plane["url"], tls_plane["ca"], tls_plane["token_file"])
    admin = Client(
        tls_plane["url"], tls_plane["token_file"].read_text().strip(), ca=str(tls_plane["ca"])
    )
    name, workdir, key, folder = applied_local(project, tmp_path, "tls", ("applied",))
    try:
        res = connect(name, cwd=project, watch=60)
        assert res.status == "connected", (res, res.notes)
        # the host holds a spent bootstrap token, the CA, and its own certificate
        (token_row,) = [
            t
            for t in admin.request("GET", "/api/tokens", query={"revoked": "true"})
            if t.get("provider") == name and t["scope"] == "bootstrap"
        ]
        assert token_row["revokedAt"]  # spent
        assert (folder / "ca.crt").read_bytes() == tls_plane["ca"].read_bytes()
        meta = json.loads((folder / "daemon.json").read_text())
        assert meta["identity"] == f"lakeshore://default/{name}"
        item = admin.submit_work(name, "echo over-tls > tls.txt", queue="default")
        done = admin.get_work(str(item["id"]), wait=30)
        assert done["state"] == "succeeded", done
        assert (workdir / "tls.txt").read_text() == "over-tls\n"
        cert = str(tmp_path / "daemon.pem")  # a copy: destroy removes the install
        shutil.copy(folder / "daemon.pem", cert)
        daemon = Client(tls_plane["url"], ca=str(tls_plane["ca"]), cert=cert)
        assert daemon.whoami()["provider"] == name

        out = destroy(name, yes=True, cwd=project)
        assert out.status in ("destroyed", "absent", "scaffolded"), (out, out.notes)
        with pytest.raises(ApiFailure) as refused:
            daemon.whoami()
        assert refused.value.status == 401
    finally:
        supervise.stop(LocalShell(), key)
