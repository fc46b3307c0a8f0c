"""SLURM ``daemon`` dispatch on a real cluster with a real daemon: the sbatch job runs
the start-up script (fetch the daemon bundle by hash with the job's own token from a
real ``lakeshore serve``, install it, exec ``nymph``), the daemon claims the provider
and runs work; terminate is ``scancel``, which ends the daemon, and revokes its token."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow
P = "/api/namespaces/default"


def _refused(url: str, token: str) -> bool:
    from dreamlake.controlplane.client import ApiFailure, Client

    try:
        Client(url, token).whoami()
    except ApiFailure as exc:
        return exc.status == 401
    return False


def _wait(predicate: Any, timeout: float, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def test_sbatch_runs_the_daemon(slurm_cluster: Any, start_server: Any, tmp_path: Path) -> None:
    srv = start_server()
    api = srv.admin
    login = slurm_cluster.login
    slurm_cluster.add_provider(api, P, "hpc-d", "daemon")
    out = api.request(
        "POST", P + "/launch", {"provider": "hpc-d", "clientToken": "D1"}, timeout=600
    )
    (job,) = [i["id"] for i in out["instances"]]
    worker = "lakeshore-hpc-d-d1-0"

    def job_log() -> str:
        logs = list(login.home.glob(f"{worker}-{job}.out"))
        return logs[0].read_text()[-2000:] if logs else "no job output yet"

    claimed = _wait(lambda: api.claims("hpc-d")["live"] >= 1, 240)
    assert claimed, (job_log(), slurm_cluster.run("squeue", "-h", "-o", "%i %T %R"))
    assert [i["instanceId"] for i in api.claims("hpc-d")["instances"]] == [worker]

    item = api.submit_work("hpc-d", "echo inside-slurm-$SLURM_JOB_ID")
    done = api.get_work(item["id"], wait=30)
    assert done["state"] == "succeeded" and f"inside-slurm-{job}" in done["outputTail"], done

    token_file = login.home / ".lakeshore" / "nymph" / "hpc-d" / "token"
    token = token_file.read_text().strip()
    api.request("DELETE", P + f"/instances/{job}")
    assert _wait(lambda: job not in slurm_cluster.run("squeue", "-h", "-o", "%i").split(), 30)

    # revoked: refused once the server's token cache (a few seconds) lets go
    assert _wait(lambda: _refused(srv.url, token), 15)
