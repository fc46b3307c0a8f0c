"""A ``local`` provider's journey with the control plane on TLS: real terraform, a
real ``lakeshore serve --tls-cert`` on 127.0.0.1, the daemon under tmux. ``connect``
hands the host a bootstrap token and the CA; the daemon spends the token on its
client certificate (key made on the host) and claims by it; work runs; ``destroy``
revokes the certificate."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from applied_local import applied_local, point_at
from dreamlake.controlplane.client import ApiFailure, Client
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.destroy import destroy
from tls_plane import serving_tls

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (apt-get install -y tmux)"),
]


@pytest.fixture
def tls_plane(tmp_path: Path) -> Iterator[dict[str, Any]]:
    with serving_tls(tmp_path) as plane:
        yield plane


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
