"""A suspended ``ec2`` / ``gce`` provider on the Pulumi backend: its machines' stopped
state is read back from the stack's state (each instance state's ``state``, the
VM's ``desiredStatus``, as the terraform path reads its own state), so
``reconcile`` finds nothing to do instead of re-running a no-op preview and up.
``FakeAutomation`` is the TEST DOUBLE for the pulumi CLI (see pulumi_helpers)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.backends.pulumi import BACKEND
from dreamlake.engine.backends.pulumi.project import PulumiProject
from dreamlake.engine.verbs.reconcile import reconcile
from dreamlake.engine.verbs.status import status
from pulumi_helpers import FakeAutomation, lay_out, write_provider

EC2 = {
    "region": "us-east-1",
    "subnet": "subnet-0123456789abcdef0",
    "instance_type": "g5.xlarge",
    "ami": "ami-0123456789abcdef0",
    "worker_count": 2,
}
GCE = {"project": "my-gpu-project", "zone": "us-central1-a", "gpu_type": "nvidia-l4"}
STATE_TYPE = "aws:ec2transitgateway/instanceState:InstanceState"
ROOT = "urn:pulumi:s::dreamlake::pulumi:pulumi:Stack::dreamlake-s"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeAutomation:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stub = bindir / "pulumi"  # TEST DOUBLE file: found on PATH, never run
    stub.write_text("#!/bin/sh\nexit 99\n")
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    automation = FakeAutomation(changes={"same": 5})
    monkeypatch.setattr(BACKEND, "_automation", automation)
    return automation


def _resource(typ: str, name: str, outputs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "urn": f"urn:pulumi:s::dreamlake::dreamlake:ec2:GpuWorkers${typ}::{name}",
        "custom": True,
        "type": typ,
        "inputs": dict(outputs),
        "outputs": dict(outputs),
        "parent": ROOT,
        **extra,
    }


def _deploy(d: Path, resources: list[dict[str, Any]], outputs: dict[str, Any]) -> None:
    """A checkpoint in the provider's own file backend, as ``up`` leaves it."""
    project = PulumiProject.of(d)
    stack = {"urn": ROOT, "custom": False, "type": "pulumi:pulumi:Stack", "outputs": outputs}
    doc = {
        "version": 3,
        "checkpoint": {
            "stack": project.stack,
            "latest": {"manifest": {}, "resources": [stack, *resources]},
        },
    }
    lay_out(
        d / "pulumi" / ".state",
        Path("x"),
        project=project.stack_project,
        stack=project.stack_short,
        data=json.dumps(doc).encode(),
    )


def _ec2_states(*states: str) -> list[dict[str, Any]]:
    return [
        _resource(STATE_TYPE, f"dreamlake-worker-{i}", {"state": s, "instanceId": f"i-{i}"})
        for i, s in enumerate(states)
    ]


def test_suspended_ec2_is_read_back_and_reconcile_does_nothing(
    project: Path, fake: FakeAutomation
) -> None:
    d = write_provider(project, "gpu", "ec2", config={**EC2, "target_status": "suspended"})
    _deploy(d, _ec2_states("stopped", "stopped"), {"worker_host": "203.0.113.1"})
    state = BACKEND.observe_state(d)
    assert state.outputs["power_state"] == ["stopped", "stopped"]
    assert state.outputs["worker_host"] == "203.0.113.1"

    assert status("gpu", dream_dir=str(project), probe=False).status == "suspended"
    res = reconcile("gpu", yes=True, dream_dir=str(project))
    assert res.status == "suspended", res.to_json()
    assert "nothing to do" in (res.headline or "") or any("step: none" in n for n in res.notes), (
        res.to_json()
    )
    assert fake.calls == []  # no preview, no up
    assert res.files == []


def test_one_running_instance_is_not_suspended(project: Path, fake: FakeAutomation) -> None:
    d = write_provider(project, "gpu", "ec2", config={**EC2, "target_status": "suspended"})
    _deploy(d, _ec2_states("stopped", "running"), {"worker_host": "203.0.113.1"})
    assert BACKEND.observe_state(d).outputs["power_state"] == ["stopped", "running"]
    res = reconcile("gpu", yes=True, dream_dir=str(project))
    # the target is suspended and one machine runs: the suspend is carried out
    assert [c[0] for c in fake.calls][:1] == ["preview"], res.to_json()


def test_an_old_copy_awaiting_deletion_is_not_counted(project: Path) -> None:
    d = write_provider(project, "gpu", "ec2", config=EC2)
    old = _resource(STATE_TYPE, "dreamlake-worker-0", {"state": "running"}, delete=True)
    _deploy(d, [old, *_ec2_states("stopped")], {})
    assert BACKEND.observe_state(d).outputs["power_state"] == ["stopped"]


def test_suspended_gce_vm_is_read_back(project: Path, fake: FakeAutomation) -> None:
    d = write_provider(project, "vm", "gce", config={**GCE, "target_status": "suspended"})
    vm = _resource(
        "gcp:compute/instance:Instance",
        "dreamlake-worker",
        {"desiredStatus": "TERMINATED", "currentStatus": "TERMINATED"},
    )
    _deploy(d, [vm], {"worker_host": "203.0.113.20"})
    assert BACKEND.observe_state(d).outputs["power_state"] == ["TERMINATED"]
    res = reconcile("vm", yes=True, dream_dir=str(project))
    assert res.status == "suspended", res.to_json()
    assert fake.calls == []


def test_a_stack_exported_power_state_wins(project: Path) -> None:
    d = write_provider(project, "gpu", "ec2", config=EC2)
    _deploy(d, _ec2_states("stopped"), {"power_state": ["running"]})
    assert BACKEND.observe_state(d).outputs["power_state"] == ["running"]


def test_a_running_stack_has_no_stopped_power_state(project: Path) -> None:
    d = write_provider(project, "gpu", "ec2", config=EC2)
    _deploy(d, _ec2_states("running", "running"), {"worker_host": "h"})
    assert BACKEND.observe_state(d).outputs["power_state"] == ["running", "running"]
    assert status("gpu", dream_dir=str(project), probe=False).status != "suspended"
