"""The kube template's VPC decision: a CIDR creates a VPC, a ``vpc-…`` id adopts one
(its subnets carry the cluster, nothing of the network is created). Planned with the
real ``terraform`` and the real hashicorp/aws provider against moto's AWS API server
on 127.0.0.1; the node-size rule is refused by that same plan."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_template_terraform import AWS_MIRROR, TEMPLATES, tf_env
from tf_binaries import candidates, version_of

pytestmark = [pytest.mark.slow, pytest.mark.needs_aws_mirror]


@pytest.fixture(scope="module")
def aws_api() -> Iterator[str]:
    if not (AWS_MIRROR / "registry.terraform.io" / "hashicorp" / "aws").is_dir():
        pytest.skip(f"needs a terraform filesystem mirror holding hashicorp/aws at {AWS_MIRROR}")
    server_mod = pytest.importorskip("moto.server")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def _tf() -> str:
    tf = next((c for c in candidates() if (version_of(c) or ()) >= (1, 2)), None)
    if tf is None:
        pytest.skip("needs terraform >= 1.2")
    return tf


@pytest.fixture(scope="module")
def kube(aws_api: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, dict]:  # type: ignore[type-arg]
    """The template copied and initialised once (the provider from the mirror)."""
    tf = _tf()
    tmp = tmp_path_factory.mktemp("kube")
    work = tmp / "terraform"
    shutil.copytree(TEMPLATES / "kube" / "terraform", work)
    env = tf_env(tmp, AWS_MIRROR)
    env.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_EC2_METADATA_DISABLED="true",
        TF_VAR_aws_endpoints=json.dumps({s: aws_api for s in ("ec2", "eks", "iam", "sts")}),
        TF_VAR_aws_skip_credentials_validation="true",
    )
    init = subprocess.run(
        [tf, "init", "-input=false", "-no-color"], cwd=work, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert init.returncode == 0, init.stderr
    return tf, work, env


def _plan(kube: tuple[str, Path, dict], tfvars: str) -> subprocess.CompletedProcess[str]:  # type: ignore[type-arg]
    tf, work, env = kube
    (work / "terraform.tfvars").write_text(tfvars)
    return subprocess.run(
        [tf, "plan", "-input=false", "-no-color"], cwd=work, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip


BASE = 'region = "us-east-1"\ncluster_name = "lab"\ngpu_instance_types = ["g5.xlarge"]\n'


def test_an_existing_vpc_is_adopted(kube: tuple, aws_api: str) -> None:  # type: ignore[type-arg]
    boto3 = pytest.importorskip("boto3")
    ec2 = boto3.client(
        "ec2", region_name="us-east-1", endpoint_url=aws_api,
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )  # fmt: skip
    vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.7.{i}.0/24", AvailabilityZone=az)["Subnet"][
            "SubnetId"
        ]
        for i, az in enumerate(("us-east-1a", "us-east-1b"))
    ]
    p = _plan(kube, BASE + f'vpc = "{vpc}"\n')
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "aws_vpc.this" not in out and "aws_subnet.public" not in out
    assert "aws_internet_gateway" not in out
    assert "# aws_eks_cluster.this will be created" in out
    for s in subnets:
        assert f'"{s}"' in out


def test_a_cidr_creates_the_vpc(kube: tuple) -> None:  # type: ignore[type-arg]
    p = _plan(kube, BASE + 'vpc = "10.42.0.0/16"\n')
    assert p.returncode == 0, p.stderr
    assert "# aws_vpc.this[0] will be created" in p.stdout
    assert "# aws_subnet.public[1] will be created" in p.stdout


def test_node_sizes_the_wrong_way_round_are_refused_by_plan(kube: tuple) -> None:  # type: ignore[type-arg]
    p = _plan(kube, BASE + 'vpc = "10.42.0.0/16"\nnode_min = 3\nnode_desired = 2\n')
    assert p.returncode != 0
    assert "node_min <= node_desired <= node_max must hold" in " ".join(p.stderr.split())
