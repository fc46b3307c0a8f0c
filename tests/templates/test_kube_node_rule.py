"""One rule for the kube node group's sizes, both backends: the terraform template's
own validation blocks and node-group precondition, run by the real ``terraform``,
give the same verdict as the Pulumi stack's config model on every case."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError
from tf_binaries import candidates, version_of

KUBE = Path(__file__).resolve().parents[2] / "templates" / "kube" / "terraform"
DECIDED = {
    "region": "us-east-1",
    "cluster_name": "lab",
    "vpc": "10.42.0.0/16",
    "gpu_instance_types": '["g5.xlarge"]',
}
CASES = [
    (0, 1, 4),
    (3, 3, 3),
    (0, 0, 1),
    (2, 1, 4),  # min above desired
    (0, 5, 4),  # desired above max
    (5, 4, 3),  # all the wrong way round
    (-1, 0, 4),  # negative min
    (0, 0, 0),  # max below 1
    (0, 4, 101),  # max above 100
]


VPCS = [
    "10.42.0.0/16",
    "vpc-0abc1234",
    "vpc-0abc1234def567890",
    "vpc-xyz",
    "10.0.0.0/8",
    "subnet-0abc1234",
]


def _terraform() -> str | None:
    for tf in candidates():
        v = version_of(tf)
        if v is not None and v >= (1, 2):
            return tf
    return None


def _precondition() -> str:
    text = (KUBE / "eks.tf").read_text()
    m = re.search(r"precondition\s*\{\s*condition\s*=\s*(.+)", text)
    assert m, "the node group's precondition is gone"
    return m.group(1).strip()


def _terraform_verdict(tf: str, work: Path, sizes: tuple[int, int, int], **extra: str) -> bool:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    env.update(TF_IN_AUTOMATION="1", CHECKPOINT_DISABLE="1", TF_CLI_CONFIG_FILE=os.devnull)
    args = [f"-var={k}={v}" for k, v in {**DECIDED, **extra}.items()]
    args += [f"-var=node_{k}={v}" for k, v in zip(("min", "desired", "max"), sizes, strict=True)]
    done = subprocess.run(
        [tf, "apply", "-auto-approve", "-input=false", "-no-color", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    if done.returncode != 0:
        assert "Invalid value for variable" in done.stderr, done.stderr
        return False
    out = subprocess.run(
        [tf, "output", "-raw", "node_bounds_ok"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return out.stdout.strip() == "true"


def _pulumi_verdict(sizes: tuple[int, int, int], vpc: str = "10.42.0.0/16") -> bool:
    from dreamlake.stacks.kube import Config

    try:
        Config(
            region="us-east-1",
            cluster_name="lab",
            vpc=vpc,
            node_type=["g5.xlarge"],
            node_min=sizes[0],
            node_desired=sizes[1],
            node_max=sizes[2],
        )
    except ValidationError:
        return False
    return True


def test_both_backends_judge_node_sizes_alike(tmp_path: Path) -> None:
    tf = _terraform()
    if tf is None:
        pytest.skip("needs terraform >= 1.2 (lifecycle preconditions)")
    # The template's variables and its precondition, without the AWS resources: the
    # rule runs offline, exactly as written in the template.
    shutil.copy(KUBE / "variables.tf", tmp_path / "variables.tf")
    (tmp_path / "rule.tf").write_text(
        f'output "node_bounds_ok" {{\n  value = {_precondition()}\n}}\n'
    )
    init = subprocess.run(
        [tf, "init", "-input=false", "-no-color"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TF_CLI_CONFIG_FILE": os.devnull, "CHECKPOINT_DISABLE": "1"},
    )
    assert init.returncode == 0, init.stderr
    verdicts = {
        sizes: (_terraform_verdict(tf, tmp_path, sizes), _pulumi_verdict(sizes)) for sizes in CASES
    }
    assert all(t == p for t, p in verdicts.values()), verdicts
    assert [s for s, (t, _) in verdicts.items() if t] == [(0, 1, 4), (3, 3, 3), (0, 0, 1)]
    # The vpc decision: a new VPC's CIDR, or an existing VPC's id to adopt.
    vpcs = {
        v: (_terraform_verdict(tf, tmp_path, (0, 1, 4), vpc=v), _pulumi_verdict((0, 1, 4), v))
        for v in VPCS
    }
    assert all(t == p for t, p in vpcs.values()), vpcs
    assert [v for v, (t, _) in vpcs.items() if t] == VPCS[:3]
