"""``lakeshore launch`` and ``lakeshore instances`` through the real binary, a real
``lakeshore serve`` and the AWS API on 127.0.0.1 (moto's server)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from lakeshore_fixtures import clean_env, lakeshore_argv
from launch_harness import AMI, ec2

pytestmark = pytest.mark.slow


def test_launch_list_terminate_from_the_cli(
    aws_api: str, start_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_api)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "server-chain")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "server-chain")
    # the server's own credential chain is lent only when its operator says so
    srv = start_server(env={"LAKESHORE_LAUNCH_SERVER_CREDENTIALS": "1"})
    conn = ["--server", srv.url, "--token-file", str(srv.data_dir / "admin.token")]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*lakeshore_argv(), *args, *conn],
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=120,
        )

    kwargs = ["--kwarg", "region=us-west-2", "--kwarg", f"image_id={AMI}"]
    assert (
        run(
            "providers", "add", "aws", "--launcher", "EC2", "--dispatch", "direct", *kwargs
        ).returncode
        == 0
    )

    nothing = run("launch")
    assert nothing.returncode == 1 and "next: lakeshore launch --mode" in nothing.stderr

    first = run("launch", "--provider", "aws", "--count", "2", "--client-token", "cli-1")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("launched 2 through aws (EC2, dispatch direct)")
    again = run("launch", "--provider", "aws", "--count", "2", "--client-token", "cli-1", "--json")
    out = json.loads(again.stdout)
    assert out["replayed"] is True and len(out["instances"]) == 2
    ids = [i["id"] for i in out["instances"]]
    reservations = ec2(aws_api, "us-west-2").describe_instances(InstanceIds=ids)["Reservations"]
    assert sum(len(r["Instances"]) for r in reservations) == 2

    listed = json.loads(run("instances", "list", "--json").stdout)
    assert sorted(i["id"] for i in listed["instances"]) == sorted(ids)
    prose = run("instances", "list").stdout
    assert all(f"{i}  aws (EC2)  running" in prose for i in ids)

    gone = run("instances", "terminate", ids[0])
    assert gone.returncode == 0 and f"terminated {ids[0]}" in gone.stdout
    unknown = run("instances", "terminate", "i-nothing")
    assert unknown.returncode == 1 and "404" in unknown.stderr
    assert [
        i["id"] for i in json.loads(run("instances", "list", "--json").stdout)["instances"]
    ] == [ids[1]]
