"""Shipped templates under real terraform binaries.

* ``local``: init + apply + output, offline (no provider plugin), on every
  terraform version found (1.0.x and 1.11).
* ``ec2``/``kube``: init from a filesystem mirror holding hashicorp/aws, then
  validate. Skipped where no mirror exists.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tf_binaries import candidates, version_of

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
AWS_MIRROR = Path(os.environ.get("DREAMLAKE_TF_MIRROR", "/opt/tf-plugins"))


def run(
    tf: str, args: list[str], cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        [tf, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert r.returncode == 0, f"{tf} {' '.join(args)}\n{r.stdout}\n{r.stderr}"
    return r


def tf_env(tmp_path: Path, mirror: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    rc = tmp_path / "cli.tfrc"
    rc.write_text(
        f'provider_installation {{\n  filesystem_mirror {{\n    path = "{mirror}"\n  }}\n}}\n'
        if mirror
        else ""
    )
    env.update(TF_CLI_CONFIG_FILE=str(rc), TF_IN_AUTOMATION="1", CHECKPOINT_DISABLE="1")
    # Go's collector running less often, on one thread: a quarter less CPU for each
    # start of the AWS provider (several per plan), the runs themselves unchanged.
    env.update(GOGC="400", GOMAXPROCS="1")
    return env


def _binaries() -> list[str]:
    found = candidates()
    return found or ["missing"]


@pytest.mark.slow
@pytest.mark.parametrize("tf", _binaries())
def test_local_applies_offline(tmp_path: Path, tf: str) -> None:
    if tf == "missing":
        pytest.skip("needs a terraform binary (TERRAFORM_BINARY or on PATH)")
    work = tmp_path / "terraform"
    shutil.copytree(TEMPLATES / "local" / "terraform", work)
    (work / "terraform.tfvars").write_text(
        'workdir = "/srv/nymph/"\nqueues = ["default", "gpu", "gpu"]\nworker_name = "box-1"\n'
    )
    env = tf_env(tmp_path)
    run(tf, ["init", "-input=false", "-no-color"], work, env)
    run(tf, ["apply", "-input=false", "-auto-approve", "-no-color"], work, env)
    out = json.loads(run(tf, ["output", "-json"], work, env).stdout)
    assert out["worker_host"]["value"] == "localhost"
    assert out["workdir"]["value"] == "/srv/nymph"
    assert out["queues"]["value"] == ["default", "gpu"]
    assert out["worker_name"]["value"] == "box-1"
    assert not (work / ".terraform" / "providers").exists(), f"{version_of(tf)} fetched a plugin"


@pytest.mark.slow
@pytest.mark.parametrize("tf", _binaries())
def test_local_validation_rejects_what_the_scan_rejects(tmp_path: Path, tf: str) -> None:
    if tf == "missing":
        pytest.skip("needs a terraform binary (TERRAFORM_BINARY or on PATH)")
    work = tmp_path / "terraform"
    shutil.copytree(TEMPLATES / "local" / "terraform", work)
    (work / "terraform.tfvars").write_text(
        'workdir = "relative"\nqueues = ["default"]\nworker_name = "box-1"\n'
    )
    env = tf_env(tmp_path)
    run(tf, ["init", "-input=false", "-no-color"], work, env)
    r = subprocess.run(
        [tf, "plan", "-input=false", "-no-color"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert r.returncode != 0
    assert "The workdir must be an absolute path" in " ".join((r.stdout + r.stderr).split())


@pytest.mark.slow
@pytest.mark.needs_aws_mirror
@pytest.mark.parametrize("vendor", ["ec2", "kube"])
def test_aws_templates_validate_from_the_mirror(tmp_path: Path, vendor: str) -> None:
    if not (AWS_MIRROR / "registry.terraform.io" / "hashicorp" / "aws").is_dir():
        pytest.skip(f"needs a terraform filesystem mirror holding hashicorp/aws at {AWS_MIRROR}")
    tf = next((c for c in candidates() if (version_of(c) or ()) >= (1, 11)), None) or next(
        iter(candidates()), None
    )
    if tf is None:
        pytest.skip("needs a terraform binary (TERRAFORM_BINARY or on PATH)")
    work = tmp_path / "terraform"
    shutil.copytree(TEMPLATES / vendor / "terraform", work)
    env = tf_env(tmp_path, AWS_MIRROR)
    run(tf, ["init", "-input=false", "-backend=false", "-no-color"], work, env)
    out = json.loads(run(tf, ["validate", "-json", "-no-color"], work, env).stdout)
    assert out["valid"], out


@pytest.mark.slow
@pytest.mark.needs_aws_mirror
def test_ec2_plans_against_a_local_aws_api(tmp_path: Path) -> None:
    """The ec2 template's endpoint settings reach a real local AWS API (moto's
    server on 127.0.0.1): plan reads the chosen subnet and plans the workers."""
    if not (AWS_MIRROR / "registry.terraform.io" / "hashicorp" / "aws").is_dir():
        pytest.skip(f"needs a terraform filesystem mirror holding hashicorp/aws at {AWS_MIRROR}")
    tf = next(iter(candidates()), None)
    if tf is None:
        pytest.skip("needs a terraform binary (TERRAFORM_BINARY or on PATH)")
    boto3 = pytest.importorskip("boto3")
    server_mod = pytest.importorskip("moto.server")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        creds = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=url, **creds)
        vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]

        work = tmp_path / "terraform"
        shutil.copytree(TEMPLATES / "ec2" / "terraform", work)
        (work / "terraform.tfvars").write_text(
            f'region = "us-east-1"\nsubnet_id = "{subnet}"\n'
            'instance_type = "g5.xlarge"\nami_id = "ami-0123456789abcdef0"\nworker_count = 2\n'
        )
        env = tf_env(tmp_path, AWS_MIRROR)
        env.update(
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_EC2_METADATA_DISABLED="true",
            TF_VAR_aws_endpoints=json.dumps({"ec2": url, "iam": url, "sts": url}),
            TF_VAR_aws_skip_credentials_validation="true",
        )
        run(tf, ["init", "-input=false", "-no-color"], work, env)
        out = run(tf, ["plan", "-input=false", "-no-color"], work, env).stdout
    finally:
        server.stop()
    # the security group, two instances and each one's desired state (running)
    assert "Plan: 5 to add, 0 to change, 0 to destroy." in out
    for address in (
        "aws_instance.worker[0]",
        "aws_instance.worker[1]",
        "aws_security_group.worker",
        "aws_ec2_instance_state.worker[0]",
        "aws_ec2_instance_state.worker[1]",
    ):
        assert f"# {address} will be created" in out
    assert f'vpc_id                 = "{vpc}"' in out or f'"{vpc}"' in out
