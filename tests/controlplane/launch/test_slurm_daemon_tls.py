"""SLURM ``daemon`` dispatch over TLS on a real cluster: ``lakeshore serve`` on
127.0.0.1 with the operator's own certificate (``--tls-ca`` naming its private CA).
The job script carries that CA and a bootstrap token; the job fetches the daemon
bundle with the token, verifying the server with the CA, and its daemon spends the
token on its certificate and works by it. Terminating the job revokes the
certificate."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from test_tls_serving import _pki, _serve, _stop
from tracking_check import P, wait

pytestmark = pytest.mark.slow


def test_a_slurm_job_enrolls_with_its_bootstrap_token(slurm_cluster: Any, tmp_path: Path) -> None:
    from dreamlake.controlplane.server.access.tokens import hash_token

    pki = _pki(tmp_path / "pki", ["localhost", "127.0.0.1"])
    server = _serve(tmp_path, "--tls-cert", str(pki.cert), "--tls-key", str(pki.key),
                    "--tls-ca", str(pki.ca), ca=pki.ca, probe=False)  # fmt: skip
    login = slurm_cluster.login
    try:
        api = Client(server.url, server.admin_token, ca=str(pki.ca), timeout=120)
        slurm_cluster.add_provider(api, P, "hpc-t", "daemon")
        out = api.request("POST", P + "/launch", {"provider": "hpc-t", "clientToken": "T1"},
                          timeout=600)  # fmt: skip
        (job,) = [i["id"] for i in out["instances"]]
        worker = "lakeshore-hpc-t-t1-0"
        folder = login.home / ".lakeshore" / "nymph" / "hpc-t"

        def job_log() -> str:
            logs = list(login.home.glob(f"{worker}-{job}.out"))
            return logs[0].read_text()[-2000:] if logs else "no job output yet"

        def claimed() -> bool:
            return int(api.request("GET", P + "/providers/hpc-t/claims")["live"]) >= 1

        assert wait(claimed, 240), (job_log(), server.output()[-2000:])
        assert (folder / "ca.crt").read_bytes() == pki.ca.read_bytes()
        token = (folder / "token").read_text().strip()
        with sqlite3.connect(server.data_dir / "lakeshore.db") as db:
            ((scope, revoked),) = db.execute(
                "SELECT scope, revoked_at FROM tokens WHERE token_hash = ?", (hash_token(token),)
            ).fetchall()
        assert scope == "bootstrap" and revoked  # spent on the daemon's certificate

        item = api.request("POST", P + "/providers/hpc-t/work", {"command": "echo in-slurm"})
        done = wait(lambda: (g := api.request("GET", P + f"/work/{item['id']}"))["state"]
                    in ("succeeded", "failed", "lost") and g, 60)  # fmt: skip
        assert done and done["state"] == "succeeded", (done, job_log())
        daemon = Client(server.url, ca=str(pki.ca), cert=str(folder / "daemon.pem"))
        assert daemon.whoami()["provider"] == "hpc-t"

        api.request("DELETE", P + f"/instances/{job}")
        with pytest.raises(ApiFailure) as refused:
            daemon.whoami()
        assert refused.value.status == 401
        assert wait(lambda: job not in slurm_cluster.run("squeue", "-h", "-o", "%i").split(), 30)
    finally:
        _stop(server)
