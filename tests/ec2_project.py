"""A project with an ``ec2`` provider against the AWS API on 127.0.0.1 (aws_api.py), as
the e2e journeys and ``benchmarks/status_vs_show.py --vendor ec2`` drive it: the
environment its commands run in, the ``.dreamrc`` that points it at the API and the
plugin mirror, the way an agent runs its commands and the tfvars edits that answer
its blocking decisions."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_api import ec2

# The dummy secret key the commands get; it must never land in a file they write.
DUMMY_SECRET = "dummy-secret-for-tests-only"


def clean_env(
    home: Path, terraform: str, machine: Mapping[str, str] | None = None, **extra: str
) -> dict[str, str]:
    """``machine`` (default: this process's environment) without any AWS, endpoint or
    terraform CLI setting, so nothing of this machine's reaches past 127.0.0.1; plus
    ``HOME``, dummy credentials, the terraform binary and the caller's ``extra``."""
    env = {
        k: v
        for k, v in (os.environ if machine is None else machine).items()
        if not k.startswith(("AWS_", "DREAMLAKE_AWS_", "DREAMLAKE_TF_", "TF_VAR_"))
        and k not in ("TF_CLI_CONFIG_FILE", "TF_PLUGIN_CACHE_DIR", "DREAMRC")
    }
    env.update(
        HOME=str(home),
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY=DUMMY_SECRET,
        TERRAFORM_BINARY=terraform,
        **extra,
    )
    return env


def build_probe_regions(url: str) -> None:
    """moto builds each region on first use; build the ones the probes ask first, so
    a busy machine's start-up cost is not charged to the probes' deadline."""
    from dreamlake.engine.probes.aws import OVERRIDE_REGIONS

    for region in OVERRIDE_REGIONS:
        ec2(url, region).describe_instances(MaxResults=5)


def team_subnet(url: str, region: str) -> str:
    """A team's own VPC and subnet (no public IPs on launch), as an account would have."""
    c = ec2(url, region)
    vpc = c.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    return str(c.create_subnet(VpcId=vpc, CidrBlock="10.20.1.0/24")["Subnet"]["SubnetId"])


def dreamrc(endpoint: str, mirror: Path) -> str:
    """A project's ``.dreamrc``: every AWS endpoint at ``endpoint`` (the dummy
    credentials not validated) and the terraform providers from the filesystem
    mirror ``mirror``."""
    return (
        "settings:\n"
        "  aws:\n"
        f"    endpoint: {endpoint}\n"
        "    skipCredentialsValidation: true\n"
        "  terraform:\n"
        f"    pluginMirror: {mirror}\n"
    )


def as_agent(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``argv`` run as an agent runs a command: stdin closed, its output captured as
    text, ten minutes at most; what its exit code means is the caller's to judge."""
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def blocking(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A ``--json`` answer's blocking decisions, by key."""
    return {b["key"]: b for b in out.get("blocking") or []}


def set_line(file: str, line: int, text: str) -> None:
    """Line ``line`` (1-based) of ``file`` replaced by ``text``: how an agent answers a
    blocking decision at the file and line it names."""
    lines = Path(file).read_text().splitlines()
    lines[line - 1] = text
    Path(file).write_text("\n".join(lines) + "\n")
