"""An EC2 worker across stop/start, against the AWS API on 127.0.0.1 (moto's server)
and a real ``lakeshore serve``: the instance's user-data is run for real on this
machine as its first boot; the idle worker is suspended (stopped) and its daemon
goes down with the "machine"; new work resumes the same instance and its "reboot"
(the user-data and the per-boot hook it left, run again) starts the daemon again
under the same instance id, which claims the work. ``instances list``, ``claims``
and the database agree at every step."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from launch_harness import AMI, ec2
from test_ec2_queue_growth import _pids_in
from tracking_check import P, agree, wait

pytestmark = pytest.mark.slow
LIVE = 2.0


def _user_data(api: Any, iid: str) -> str:
    attr = api.describe_instance_attribute(InstanceId=iid, Attribute="userData")
    return base64.b64decode(attr["UserData"]["Value"]).decode()


def test_ec2_worker_survives_stop_and_start(
    aws_api: str, start_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_api)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "server-chain")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "server-chain")
    srv = start_server(  # the server's own (test) AWS chain, as its operator allows
        live_seconds=LIVE,
        env={"LAKESHORE_QUEUE_TICK": "0.5", "LAKESHORE_LAUNCH_SERVER_CREDENTIALS": "1"},
    )
    api = srv.admin
    kwargs = {"region": "us-east-1", "image_id": AMI}
    api.request("POST", P + "/providers", {"name": "aws", "launcher": "EC2", "kwargs": kwargs})
    api.request(
        "POST",
        P + "/queues",
        {"name": "gpu", "provider": "aws", "max": 1, "idleSeconds": 2, "idleAction": "suspend"},
    )

    def check() -> dict[str, Any]:
        return agree(api, srv.data_dir, "aws", LIVE)

    def run(command: str) -> dict[str, Any]:
        item = api.request("POST", P + "/providers/aws/work", {"command": command, "queue": "gpu"})

        def finished() -> dict[str, Any] | None:
            got = api.request("GET", P + f"/work/{item['id']}")
            return got if got["state"] in ("succeeded", "failed", "lost") else None

        return item | {"wait": finished}

    def events() -> list[str]:
        return [e["action"] for e in api.request("GET", P + "/queues/gpu/status")["events"]]

    host = tmp_path / "instance"
    host.mkdir()
    hooks = tmp_path / "per-boot"
    first = run("echo first-boot")
    launched = wait(lambda: check()["instances"], 60)
    assert launched, (events(), srv.log_tail())
    (iid,) = launched
    cloud = ec2(aws_api)
    script = _user_data(cloud, iid)
    assert len(script.encode()) < 16 * 1024
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("LAKESHORE_", "AWS_"))},
        "LAKESHORE_NYMPH_DIR": str(host),
        "LAKESHORE_INSTANCE_ID": iid,
        "LAKESHORE_NO_SYSTEMD": "1",
        "LAKESHORE_PER_BOOT_DIR": str(hooks),
    }

    def boot() -> None:
        ran = subprocess.run(
            ["sh", "-c", script], env=env, capture_output=True, text=True, timeout=600
        )
        assert ran.returncode == 0, ran.stderr[-2000:]

    try:
        boot()  # the first boot: cloud-init runs the user-data
        assert (hooks / "lakeshore-nymph.sh").is_file()
        done = wait(first["wait"], 120)
        assert done and done["state"] == "succeeded", (done, events())
        seen = check()
        assert seen["instances"] == [iid] and seen["claims"] == [iid]
        started = api.request("GET", P + "/instances")["instances"][0]["startedAt"]

        # idle past 2 s: the queue stops (suspends) the instance, same row
        assert wait(lambda: "suspend" in events(), 60), events()
        states = {
            i["State"]["Name"]
            for r in cloud.describe_instances(InstanceIds=[iid])["Reservations"]
            for i in r["Instances"]
        }
        assert states <= {"stopping", "stopped"}, states
        # the machine goes down: its daemon with it (it deregisters on the way out)
        for pid in _pids_in(host):
            os.kill(pid, signal.SIGTERM)
        assert wait(lambda: not _pids_in(host), 20)
        seen = wait(lambda: (s := check())["claims"] == [] and s, 20)
        assert seen and seen["instances"] == [iid], check()

        # new work resumes the same instance; the start timeout counts from the resume
        second = run("echo after-reboot")
        assert wait(lambda: "resume" in events(), 30), events()
        resumed = api.request("GET", P + "/instances")["instances"][0]
        assert resumed["id"] == iid and resumed["startedAt"] > started
        # the "reboot": the per-boot hook starts the daemon; the user-data run again
        # (a second boot that re-runs it) starts nothing twice
        subprocess.run([str(hooks / "lakeshore-nymph.sh")], env=env, check=True, timeout=60)
        boot()
        assert wait(lambda: len(_pids_in(host)) == 1, 20), _pids_in(host)
        done = wait(second["wait"], 120)
        assert done and done["state"] == "succeeded", (done, events())
        assert "after-reboot" in done["outputTail"]
        seen = check()
        assert seen["instances"] == [iid] and seen["claims"] == [iid]
        workers = api.request("GET", P + "/workers", query={"provider": "aws"})
        assert [w["instanceId"] for w in workers] == [iid]  # one worker, the same id
        assert len(api.request("GET", P + "/instances", query={"all": "true"})["instances"]) == 1
        assert "fail" not in events() and "launch" in events()
        assert events().count("launch") == 1  # resumed, never launched again
    finally:
        for pid in _pids_in(host):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
