"""Drift on the ``ec2`` vendor, for real: terraform and the ``hashicorp/aws`` provider
(from the filesystem mirror) against an AWS API implementation on 127.0.0.1 (moto's
server, the double for an AWS account). The instance's tags and the security
group's rules are changed through the API, behind the engine's back:
``provider drift`` names both resources and what changed, ``status`` says
``degraded: ["drift"]`` without running terraform, ``plan`` shows the change back,
and after ``apply`` the record, older than the state, is gone."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_api import MOTO_SERVER, ec2, moto_server
from dreamlake.engine.backends.terraform.binaries import available
from ec2_project import (
    as_agent,
    blocking,
    build_probe_regions,
    clean_env,
    dreamrc,
    set_line,
    team_subnet,
)

BIN = Path(sys.executable).parent
DREAMLAKE = BIN / "dreamlake"
MIRROR = Path(os.environ.get("DREAMLAKE_TF_PLUGIN_MIRROR") or "/opt/tf-plugins")
AWS_IN_MIRROR = MIRROR / "registry.terraform.io" / "hashicorp" / "aws"
BINARIES = [
    (v, p) for v, p in available() if v.split(".")[0].isdigit() and int(v.split(".")[0]) >= 1
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs_aws_mirror,
    pytest.mark.skipif(
        not (AWS_IN_MIRROR.is_dir() and any(AWS_IN_MIRROR.glob("*/linux_amd64"))),
        reason=f"needs a terraform filesystem mirror holding hashicorp/aws (linux_amd64) at {MIRROR}",
    ),
    pytest.mark.skipif(not BINARIES, reason="needs a terraform binary >= 1.0"),
    pytest.mark.skipif(
        not MOTO_SERVER.is_file(),
        reason=f"needs moto's server at {MOTO_SERVER} (pip install 'moto[server]')",
    ),
    pytest.mark.skipif(
        not DREAMLAKE.is_file(), reason=f"needs the dreamlake console script at {DREAMLAKE}"
    ),
]


@pytest.fixture
def aws_api(tmp_path: Path) -> Iterator[str]:
    with moto_server(tmp_path / "moto.log") as url:
        build_probe_regions(url)
        yield url


def dl(env: dict[str, str], cwd: Path, command: str) -> dict[str, Any]:
    """One ``dreamlake … --json`` command line, run as an agent runs it; rc 0 asserted."""
    argv = [str(DREAMLAKE), *shlex.split(command)[1:], "--json"]
    proc = as_agent(argv, cwd, env)
    assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def test_tags_and_rules_changed_outside_are_drift_until_applied_back(
    aws_api: str, tmp_path: Path
) -> None:
    _version, terraform = BINARIES[-1]
    subnet = team_subnet(aws_api, "us-east-1")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".dreamrc").write_text(dreamrc(aws_api, MIRROR))
    env = clean_env(tmp_path / "home", terraform)

    out = dl(env, proj, "dreamlake provider create -n gpu --provider ec2")
    b = blocking(out)
    tfvars = out["nextAction"]["file"]
    set_line(tfvars, b["region"]["line"], 'region = "us-east-1"')
    b = blocking(dl(env, proj, "dreamlake provider status -n gpu"))
    set_line(tfvars, b["subnet"]["line"], f'subnet_id = "{subnet}"')
    set_line(tfvars, b["instance_type"]["line"], 'instance_type = "g5.xlarge"')
    set_line(tfvars, b["ami"]["line"], f'ami_id = "{b["ami"]["observed"][0]}"')
    with open(tfvars, "a") as f:
        f.write("associate_public_ip = null\n")  # as test_ec2_journey: moto's own reading
    assert dl(env, proj, "dreamlake provider plan -n gpu")["status"] == "ready"
    applied = dl(env, proj, "dreamlake provider apply -n gpu --yes")
    assert applied["status"] == "applied", applied
    (instance,) = applied["outputs"]["instance_ids"]

    # What the double reads back differently from what the provider wrote at create
    # (moto is not AWS) is there before anything is changed: the baseline.
    out = dl(env, proj, "dreamlake provider drift -n gpu")
    baseline = {d["address"]: set(d["attributes"]) for d in out.get("drift") or []}
    tf = proj / ".dream/providers/gpu/terraform"
    state_before = (tf / "terraform.tfstate").read_bytes()

    # Behind the engine's back: a tag changed on the instance, a rule added to its group.
    api = ec2(aws_api, "us-east-1")
    api.create_tags(Resources=[instance], Tags=[{"Key": "Name", "Value": "renamed-by-hand"}])
    group = api.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0][
        "SecurityGroups"
    ][0]["GroupId"]
    api.authorize_security_group_ingress(
        GroupId=group,
        IpPermissions=[
            {
                "IpProtocol": "tcp",
                "FromPort": 8080,
                "ToPort": 8080,
                "IpRanges": [{"CidrIp": "0.0.0.0/0"}],
            }
        ],
    )

    out = dl(env, proj, "dreamlake provider drift -n gpu")
    assert (tf / "terraform.tfstate").read_bytes() == state_before  # the check wrote no state
    assert str(tf / "tfplan.drift.json") in out["files"]
    drift = {d["address"]: d for d in out["drift"]}
    assert "tags.Name" in drift["aws_instance.worker[0]"]["attributes"], (drift, baseline)
    assert "ingress" in drift["aws_security_group.worker"]["attributes"], (drift, baseline)
    assert "tags.Name" not in baseline.get("aws_instance.worker[0]", set())
    assert "ingress" not in baseline.get("aws_security_group.worker", set())
    assert all(d["seenAt"] for d in drift.values())

    st = dl(env, proj, "dreamlake provider status -n gpu")
    assert st["status"] in ("applied", "unclaimed") and "drift" in st["degraded"], st
    assert {d["address"] for d in st["drift"]} == set(drift)
    assert st["nextAction"] == {"kind": "run", "command": "dreamlake provider plan -n gpu"}

    planned = dl(env, proj, st["nextAction"]["command"])
    # the tag goes back; the group's rules are not set by the template (no ssh_ingress_cidrs)
    assert planned["status"] == "ready" and planned["plan"]["change"] >= 1, planned
    dl(env, proj, "dreamlake provider apply -n gpu --yes")
    st = dl(env, proj, "dreamlake provider status -n gpu")
    assert "drift" not in st["degraded"] and "drift" not in st, st
    assert not (tf / "tfplan.drift.json").exists()  # older than the state: dropped
    tags = api.describe_tags(Filters=[{"Name": "resource-id", "Values": [instance]}])["Tags"]
    assert {t["Key"]: t["Value"] for t in tags}["Name"] != "renamed-by-hand"
