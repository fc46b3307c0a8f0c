"""A queue that grows its own EC2 workers, end to end against the AWS API on
127.0.0.1 (moto's server) and a real ``lakeshore serve``: pending work launches
instances up to ``max``; the user-data of one instance is run for real on this
machine (it fetches the daemon bundle by content hash with that instance's token,
installs it into a venv and starts ``nymph``), the other instance's token runs a
plain ``nymph``; the work gets done, the idle workers are stopped (EC2 supports the
stateful lifecycle), and new work resumes one. Every decision is in ``queues status``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from launch_harness import AMI, ec2

pytestmark = pytest.mark.slow
P = "/api/namespaces/default"


def _wait(predicate: Any, timeout: float, interval: float = 0.3) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def _user_data(api: Any, iid: str) -> str:
    attr = api.describe_instance_attribute(InstanceId=iid, Attribute="userData")
    return base64.b64decode(attr["UserData"]["Value"]).decode()


def _pids_in(folder: Path) -> list[int]:
    """Processes whose working directory is ``folder`` (the daemon the script started)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if Path(os.readlink(entry / "cwd")) == folder:
                    out.append(int(entry.name))
    return out


def test_queue_grows_stops_and_resumes_ec2_workers(
    aws_api: str,
    start_server: Any,
    start_nymph: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_api)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "server-chain")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "server-chain")
    srv = start_server(extra=["--launch-server-credentials"])  # the test AWS chain
    api = srv.admin
    api.request(
        "POST",
        P + "/providers",
        {"name": "aws", "launcher": "EC2", "kwargs": {"region": "us-east-1", "image_id": AMI}},
    )
    api.request(
        "POST", P + "/modes", {"name": "small", "provider": "aws", "instance_type": "t3.small"}
    )
    api.request(
        "POST",
        P + "/queues",
        {"name": "gpu", "provider": "aws", "mode": "small", "max": 2, "idleSeconds": 3,
         "idleAction": "suspend"},
    )  # fmt: skip
    items = [
        api.request("POST", P + "/providers/aws/work", {"command": f"echo job-{n}", "queue": "gpu"})
        for n in range(3)
    ]

    def status() -> dict[str, Any]:
        return api.request("GET", P + "/queues/gpu/status")  # type: ignore[no-any-return]

    grown = _wait(lambda: len(status()["instances"]) == 2 and status(), 180)
    assert grown, (status(), srv.log_tail())
    ids = [i["id"] for i in grown["instances"]]
    events = [e["action"] for e in status()["events"]]
    assert events[0] == "launch"
    cloud = ec2(aws_api)
    live = {
        i["InstanceId"]: {t["Key"]: t["Value"] for t in i["Tags"]}
        for r in cloud.describe_instances(InstanceIds=ids)["Reservations"]
        for i in r["Instances"]
    }
    assert all(t["lakeshore-queue"] == "gpu" and t["lakeshore"] == "true" for t in live.values())
    # three pending items, two workers, and no third: the queue is at max
    assert _wait(lambda: "at-max" in [e["action"] for e in status()["events"]], 20)

    # instance 0 runs its user-data for real; instance 1's token runs a plain nymph
    host = tmp_path / "instance-0"
    host.mkdir()
    script = _user_data(cloud, ids[0])
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("LAKESHORE_", "AWS_"))},
        "LAKESHORE_NYMPH_DIR": str(host),
        "LAKESHORE_INSTANCE_ID": ids[0],
        "LAKESHORE_NO_SYSTEMD": "1",
        "LAKESHORE_PER_BOOT_DIR": str(tmp_path / "per-boot"),
    }
    try:
        ran = subprocess.run(
            ["sh", "-c", script], env=env, capture_output=True, text=True, timeout=600
        )
        assert ran.returncode == 0, ran.stderr[-2000:]
        token_1 = _user_data(cloud, ids[1]).split("<<'LAKESHORE_TOKEN'\n", 1)[1].split("\n")[0]
        plain = start_nymph(srv.url, token_1, provider="aws", queues="gpu", instance_id=ids[1])

        def all_done() -> bool:
            states = [api.request("GET", P + f"/work/{w['id']}")["state"] for w in items]
            return all(s == "succeeded" for s in states)

        assert _wait(all_done, 240), (
            status(),
            (host / "nymph.log").read_text()[-1500:] if (host / "nymph.log").exists() else "",
        )

        # idle past 3 s: both workers are stopped (suspended), not terminated
        def both_suspended() -> bool:
            return sum(e["action"] == "suspend" for e in status()["events"]) >= 2

        assert _wait(both_suspended, 60), status()
        states = {
            i["InstanceId"]: i["State"]["Name"]
            for r in cloud.describe_instances(InstanceIds=ids)["Reservations"]
            for i in r["Instances"]
        }
        assert set(states.values()) <= {"stopping", "stopped"}, states

        # a stopped instance's daemon is gone with it: stop the two on this machine too
        for pid in _pids_in(host):
            os.kill(pid, signal.SIGTERM)
        plain.terminate()

        # new work resumes a suspended worker instead of launching a third
        api.request("POST", P + "/providers/aws/work", {"command": "echo again", "queue": "gpu"})
        assert _wait(lambda: "resume" in [e["action"] for e in status()["events"]], 30), status()
        assert len(api.request("GET", P + "/instances", query={"all": "true"})["instances"]) == 2
        shown = status()["events"]
        assert all(e["by"] for e in shown) and all(e["detail"] for e in shown)
    finally:
        for pid in _pids_in(host):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
