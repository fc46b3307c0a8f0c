"""The AWS probes against a real AWS API implementation (moto's server on 127.0.0.1),
reached through the same endpoint settings terraform gets."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aws_api import MOTO_SERVER, start_moto, stop
from dreamlake.engine.probes import decided_value, run_probes
from dreamlake.engine.world.paths import ProviderPaths

AMI = "ami-760aaa0f"  # one of the images moto serves in every region


def _provider(tmp_path: Path, settings: dict | None = None, tfvars: str = "") -> ProviderPaths:
    d = tmp_path / ".dream" / "providers" / "demo"
    (d / "terraform").mkdir(parents=True)
    record = {
        "name": "demo",
        "vendor": "ec2",
        "backend": "terraform",
        "templateVersion": 1,
        "engineVersion": "0.1.0",
        "settings": settings or {},
    }
    (d / "provider.json").write_text(json.dumps(record))
    (d / "terraform" / "terraform.tfvars").write_text(tfvars)
    return ProviderPaths(d)


def _ec2(url: str, region: str):  # type: ignore[no-untyped-def]
    import boto3

    return boto3.client(
        "ec2",
        region_name=region,
        endpoint_url=url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture(scope="module")
def moto_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """moto's server in its own process for this module (not the conftest's, in this
    one): the probe's deadline then measures the probe, not the test process's threads
    waiting on each other; and each region it builds holds moto's base images only
    (aws_api.base_images), so ``all`` builds every region there is in seconds."""
    if not MOTO_SERVER.is_file():
        pytest.skip(f"needs moto's server at {MOTO_SERVER} (pip install 'moto[server]')")
    proc, url = start_moto(tmp_path_factory.mktemp("moto") / "moto.log")
    try:
        yield url
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def placed(moto_url: str) -> str:
    """Instances in us-east-1 (running) and eu-west-1 (stopped); us-west-2 only has a
    terminated one, which does not make a region "in use"."""
    _ec2(moto_url, "us-east-1").run_instances(
        ImageId=AMI, MinCount=1, MaxCount=1, InstanceType="t3.micro"
    )
    eu = _ec2(moto_url, "eu-west-1")
    iid = eu.run_instances(ImageId=AMI, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    eu.stop_instances(InstanceIds=[iid])
    usw = _ec2(moto_url, "us-west-2")
    gone = usw.run_instances(ImageId=AMI, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    usw.terminate_instances(InstanceIds=[gone])
    return moto_url


def test_regions_in_use_through_provider_settings(
    aws_env: None, placed: str, tmp_path: Path
) -> None:
    paths = _provider(tmp_path, {"aws": {"endpoints": {"ec2": placed}}})
    observed, degraded = run_probes({"aws-regions-in-use"}, paths)
    assert observed == {"aws-regions-in-use": ["eu-west-1", "us-east-1"]}
    assert "no-probe" not in degraded


def test_regions_in_use_through_environment(
    aws_env: None, placed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DREAMLAKE_AWS_ENDPOINT_URL", placed)
    monkeypatch.setenv("DREAMLAKE_AWS_PROBE_REGIONS", "us-east-1,ap-south-1")
    observed, degraded = run_probes({"aws-regions-in-use"}, _provider(tmp_path))
    assert observed == {"aws-regions-in-use": ["us-east-1"]}  # only the regions asked
    assert degraded == []


def test_all_regions_asks_describe_regions(aws_env: None, placed: str, tmp_path: Path) -> None:
    # moto builds each region on first use; build them first so the probe's own
    # deadline measures the probe, not the server's start-up on a busy machine.
    for r in _ec2(placed, "us-east-1").describe_regions()["Regions"]:
        _ec2(placed, r["RegionName"]).describe_instances(MaxResults=5)
    paths = _provider(tmp_path, {"aws": {"endpoint": placed, "probeRegions": ["all"]}})
    observed, degraded = run_probes({"aws-regions-in-use"}, paths)
    assert degraded == []
    assert {"eu-west-1", "us-east-1"} <= set(observed["aws-regions-in-use"])
    assert "us-west-2" not in observed["aws-regions-in-use"]  # only a terminated instance


def test_regional_probes_use_the_decided_region(aws_env: None, placed: str, tmp_path: Path) -> None:
    ec2 = _ec2(placed, "eu-west-1")
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.42.1.0/24")["Subnet"]["SubnetId"]
    paths = _provider(tmp_path, {"aws": {"endpoints": {"ec2": placed}}}, 'region = "eu-west-1"\n')
    assert decided_value(paths, "region") == "eu-west-1"
    observed, degraded = run_probes({"aws-subnets", "aws-vpcs", "aws-gpu-amis"}, paths)
    assert degraded == []
    assert observed["aws-subnets"][0] == subnet  # the team's own subnets come first
    assert f"{vpc} (10.42.0.0/16)" in observed["aws-vpcs"]
    amis = observed["aws-gpu-amis"]
    assert amis and all(a.startswith("ami-") for a in amis)
    assert AMI not in amis  # a plain Amazon Linux image is not GPU-ready


def test_regional_probes_without_a_region_observe_nothing(
    aws_env: None, placed: str, tmp_path: Path
) -> None:
    paths = _provider(
        tmp_path, {"aws": {"endpoints": {"ec2": placed}}}, 'region = "not a region"\n'
    )
    observed, degraded = run_probes({"aws-subnets"}, paths)
    assert observed == {}  # not asked: an empty list would claim the region has none
    assert degraded == []


def test_no_credentials_means_no_observed_and_no_probe(tmp_path: Path) -> None:
    """Without credentials nothing is asked and boto3 is never imported."""
    paths = _provider(tmp_path)
    code = (
        "import sys, json; from pathlib import Path\n"
        "from dreamlake.engine.world.paths import ProviderPaths\n"
        "from dreamlake.engine.probes import run_probes\n"
        f"r = run_probes({{'aws-regions-in-use', 'aws-subnets'}}, ProviderPaths(Path({str(paths.dir)!r})))\n"
        "print(json.dumps([r[0], r[1], 'boto3' in sys.modules]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    observed, degraded, imported = json.loads(out.stdout)
    assert observed == {}
    assert degraded == ["no-credentials", "no-probe"]
    assert imported is False


def test_unreachable_endpoint_degrades_quickly(aws_env: None, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    paths = _provider(tmp_path, {"aws": {"endpoints": {"ec2": f"http://127.0.0.1:{port}"}}})
    t0 = time.monotonic()
    observed, degraded = run_probes({"aws-regions-in-use"}, paths)
    assert observed == {}
    assert degraded == ["no-probe"]
    assert time.monotonic() - t0 < 15


def test_unknown_probe_is_no_probe_and_nothing_asked_is_nothing(tmp_path: Path) -> None:
    paths = _provider(tmp_path)
    assert run_probes(set(), paths) == ({}, [])
    assert run_probes({"no-such-probe"}, paths) == ({}, ["no-probe"])


def test_ssh_config_hosts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text(
        "Host *\n  ServerAliveInterval 30\nHost lab-box gpu?\n  User me\nhost ops.internal\n"
    )
    observed, degraded = run_probes({"ssh-config-hosts"}, _provider(tmp_path))
    assert observed == {"ssh-config-hosts": ["lab-box", "ops.internal"]}
    assert degraded == []


def test_a_region_closed_to_the_credentials_is_not_a_failure() -> None:
    from botocore.exceptions import ClientError, EndpointConnectionError
    from dreamlake.engine.probes.aws import _denied

    def err(code: str) -> ClientError:
        return ClientError({"Error": {"Code": code, "Message": "no"}}, "DescribeInstances")

    assert _denied(err("UnauthorizedOperation"))
    assert _denied(err("OptInRequired"))
    assert not _denied(err("RequestLimitExceeded"))
    assert not _denied(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"))
