"""Every Python example in docs/pulumi.md is run, not only shown: each ```python block
is written to a file and run as a program under the Pulumi SDK's mocks
(``run_program.py``: the cloud APIs are the TEST DOUBLE of ``mock_stack.py``, the
Automation API's stack a TEST DOUBLE for the pulumi CLI), and what it declares and
exports is checked."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
DOC = HERE.parents[1] / "docs" / "pulumi.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
STACK_CONFIG = {"aws:region": "us-east-1"}


def examples() -> list[str]:
    return BLOCK.findall(DOC.read_text(encoding="utf-8"))


def run(tmp_path: Path, code: str) -> dict[str, Any]:
    program = tmp_path / "__main__.py"
    program.write_text(code)
    proc = subprocess.run(
        [sys.executable, str(HERE / "run_program.py"), str(program), json.dumps(STACK_CONFIG)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=HERE,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["error"] is None, result["error"]
    return result


def by_title(title: str) -> str:
    """The first python block after the heading ``title``."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(title)
    match = BLOCK.search(text, start)
    assert match is not None, title
    return match.group(1)


def test_the_page_has_examples_and_each_is_run_here() -> None:
    # every block is one of the two below: a new one needs a check of its own
    assert len(examples()) == 2
    assert by_title("### Embedded in an existing Pulumi program") in examples()
    assert by_title("### In your own Automation API code") in examples()


@pytest.mark.skipif(find_spec("pulumi_aws") is None, reason="needs pulumi-aws (the dev extra)")
def test_embedded_example(tmp_path: Path) -> None:
    res = run(tmp_path, by_title("### Embedded in an existing Pulumi program"))
    assert res["exports"]["regions"] == ["us-east-1", "eu-west-1"]
    assert res["exports"]["worker_user"] == "ubuntu"
    assert res["exports"]["worker_host"].startswith("203.0.113.")
    comps = [r for r in res["resources"] if r["type"] == "dreamlake:ec2:GpuWorkers"]
    assert sorted(c["name"] for c in comps) == ["inference", "training"]
    # the components made no provider of their own; the team's eu one is used
    assert not [
        r for r in res["resources"] if r["type"] == "pulumi:providers:aws" and r["name"] != "eu"
    ]
    by_urn = {c["urn"]: c["name"] for c in comps}
    groups = [r for r in res["resources"] if r["type"] == "aws:ec2/securityGroup:SecurityGroup"]
    ours = [g for g in groups if g["parent"] in by_urn]
    assert len({g["state"]["name"] for g in ours}) == 2
    for inst in (r for r in res["resources"] if r["type"] == "aws:ec2/instance:Instance"):
        owner = by_urn[inst["parent"]]
        if owner == "training":
            assert inst["inputs"]["subnetId"] == "platform-a-id"
            assert inst["inputs"]["vpcSecurityGroupIds"] == ["training-worker-id", "bastion-id"]
            assert inst["provider"] == ""
        else:
            assert inst["provider"].endswith("::eu-id")


def test_automation_api_example(tmp_path: Path) -> None:
    res = run(tmp_path, by_title("### In your own Automation API code"))
    assert res["printed"].strip().splitlines()[-1] == "localhost"
    assert [r["type"] for r in res["resources"]] == [
        "pulumi:pulumi:Stack",
        "dreamlake:local:LocalWorker",
    ]
