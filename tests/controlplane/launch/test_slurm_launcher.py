"""The SLURM launcher for real: sbatch, squeue, scontrol and scancel over SSH (the
real sshd as the login node) on a real single-node SLURM cluster (munged, slurmctld,
slurmd), driven through the control plane's launch, instances and terminate routes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from launch_harness import P, ok

pytestmark = pytest.mark.slow


def _provider(client: Any, cluster: Any, tmp_path: Path, key: Path, name: str = "hpc") -> None:
    ok(
        client.post(
            P + "/secrets",
            json={"name": f"{name}-key", "kind": "ssh_key", "value": key.read_text()},
        ),
        201,
    )
    kwargs = {
        "host": "127.0.0.1",
        "user": "root",
        "port": cluster.login.port,
        "partition": "debug",
        "private_key": {"$secret": f"{name}-key"},
        "host_key": cluster.login.host_key,
    }
    ok(
        client.post(P + "/providers", json={"name": name, "launcher": "SLURM", "kwargs": kwargs}),
        201,
    )


def _state(client: Any, job: str) -> str:
    rows = ok(client.get(P + "/instances", params={"all": "true"}))["instances"]
    return next(i["state"] for i in rows if i["id"] == job)


def _wait_state(client: Any, job: str, want: set[str], timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        state = _state(client, job)
        if state in want or time.monotonic() > deadline:
            return state
        time.sleep(0.5)


def test_sbatch_squeue_scancel(
    slurm_cluster: Any, app_client: tuple[Any, Any], tmp_path: Path
) -> None:
    client, _ = app_client
    cluster = slurm_cluster
    _provider(client, cluster, tmp_path, cluster.login.client_key)
    command = 'echo "ran $SLURM_JOB_ID on $SLURM_JOB_PARTITION" > "$HOME/ran-$SLURM_JOB_ID.txt"; sleep 120'
    body = {"provider": "hpc", "clientToken": "S1", "command": command}
    out = ok(client.post(P + "/launch", json=body), 201)
    (job,) = [i["id"] for i in out["instances"]]
    assert job.isdigit() and out["result"]["loginNode"] == f"root@127.0.0.1:{cluster.login.port}"
    assert f"{job} lakeshore-hpc-s1-0" in cluster.run("squeue", "-h", "-o", "%i %j")

    # a retried request submits nothing more
    assert ok(client.post(P + "/launch", json=body), 201)["replayed"] is True
    assert cluster.run("squeue", "-h", "-n", "lakeshore-hpc-s1-0", "-o", "%i").split() == [job]

    assert _wait_state(client, job, {"RUNNING"}) == "RUNNING"
    ran = cluster.login.home / f"ran-{job}.txt"
    deadline = time.monotonic() + 20
    while not ran.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ran.read_text().strip() == f"ran {job} on debug"

    gone = ok(client.delete(P + f"/instances/{job}"))
    assert gone["state"] == "terminated"
    deadline = time.monotonic() + 20
    while job in cluster.run("squeue", "-h", "-o", "%i").split() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert "JobState=CANCELLED" in cluster.run("scontrol", "-o", "show", "job", job)

    # a job that ends by itself leaves the listing on the next live look
    quick = ok(client.post(P + "/launch", json={"provider": "hpc", "command": "true"}), 201)[
        "instances"
    ][0]["id"]
    assert _wait_state(client, quick, {"COMPLETED"}) == "COMPLETED"
    assert quick not in [i["id"] for i in ok(client.get(P + "/instances"))["instances"]]


def test_a_refused_key_is_a_4xx_without_the_key(
    slurm_cluster: Any, app_client: tuple[Any, Any], tmp_path: Path
) -> None:
    client, _ = app_client
    _provider(client, slurm_cluster, tmp_path, slurm_cluster.login.wrong_key, name="hpc-wrong")
    r = client.post(P + "/launch", json={"provider": "hpc-wrong", "command": "true"})
    assert r.status_code == 422 and "refused the ssh key" in r.json()["detail"], r.text
    key_lines = slurm_cluster.login.wrong_key.read_text().splitlines()[1:-1]
    assert all(line not in r.text for line in key_lines)


def test_direct_jobs_record_their_outcome(
    slurm_cluster: Any, app_client: tuple[Any, Any], tmp_path: Path
) -> None:
    """``direct`` (SLURM's default): ``sbatch`` of the command, no daemon left; once
    the job ends its exit status and output tail are on the instance row, and
    ``instances list``, ``claims`` and the database agree at every step."""
    from tracking_check import agree, wait

    client, app = app_client
    _provider(client, slurm_cluster, tmp_path, slurm_cluster.login.client_key, name="hpc-d")
    assert ok(client.get(P + "/providers/hpc-d"))["dispatch"] == "direct"

    class Api:  # tracking_check's reader, over the in-process client
        def request(self, method: str, path: str, query: Any = None) -> Any:
            return ok(client.request(method, path, params=query))

    def check() -> dict[str, Any]:
        return agree(Api(), app.state.settings.data_dir, "hpc-d", 3.0)

    good = ok(client.post(P + "/launch", json={"provider": "hpc-d", "command": "echo fine"}), 201)
    bad = ok(
        client.post(P + "/launch", json={"provider": "hpc-d", "command": "echo broken; exit 4"}),
        201,
    )
    (g,) = [i["id"] for i in good["instances"]]
    (b,) = [i["id"] for i in bad["instances"]]
    assert good["dispatch"] == "direct" and good["instances"][0]["details"]["dispatch"] == "direct"
    seen = check()
    assert seen["claims"] == []  # nothing long-lived on the cluster
    assert wait(lambda: check()["instances"] == [], 60), check()

    rows = {
        i["id"]: i for i in ok(client.get(P + "/instances", params={"all": "true"}))["instances"]
    }
    assert rows[g]["state"] == "COMPLETED" and rows[g]["terminatedAt"]
    assert rows[g]["details"]["outcome"] == {"exitCode": 0, "outputTail": "fine\n"}
    assert rows[b]["state"] == "FAILED"
    assert rows[b]["details"]["outcome"] == {"exitCode": 4, "outputTail": "broken\n"}
    # a direct launch without a command is refused before anything is submitted
    r = client.post(P + "/launch", json={"provider": "hpc-d"})
    assert r.status_code == 422 and "runs a command" in r.json()["detail"]


def test_start_delay_reads_sbatch_test_only() -> None:
    from dreamlake.controlplane.launchers.slurm import start_delay

    said = (
        "sbatch: Job 3 to start at 2026-12-02T02:40:10 using 1 processors on nodes n1 "
        "in partition debug"
    )
    assert start_delay(said, "2026-12-02T02:40:00\n") == 10.0
    assert start_delay(said.replace("02:40:10", "02:40:00"), "2026-12-02T02:40:00") == 0.0
    never = "sbatch: Job 4 to start at 6110-12-25T04:36:13 using 1 processors on nodes n1"
    assert start_delay(never, "2026-12-02T02:40:00") > 10**9  # a full node, no time limits
    assert start_delay("sbatch: error: Batch job submission failed", "2026-12-02T02:40:00") is None
    assert start_delay(said, "not a time") is None
