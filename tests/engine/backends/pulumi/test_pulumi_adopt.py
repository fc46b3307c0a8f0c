"""Adopting a stack a Pulumi team already manages:
``create -n X --backend pulumi --stack ORG/PROJECT/STACK``. Its status is derived
from that stack's state (a file backend laid out as the CLI writes it), and
``connect`` targets the host its outputs name."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.contract.errors import RemoteError
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status
from pulumi_helpers import lay_out

REF = "organization/gpu-fleet/prod"


def _stack(root: Path, outputs: dict[str, Any]) -> Path:
    latest = {
        "manifest": {"time": "2026-11-30T09:00:00Z"},
        "resources": [
            {
                "urn": "urn:pulumi:prod::gpu-fleet::pulumi:pulumi:Stack::gpu-fleet-prod",
                "type": "pulumi:pulumi:Stack",
                "custom": False,
                "outputs": outputs,
            },
            {
                "urn": "urn:pulumi:prod::gpu-fleet::aws:ec2/instance:Instance::gpu-0",
                "type": "aws:ec2/instance:Instance",
                "custom": True,
                "id": "i-0abc",
            },
        ],
    }
    data = {"version": 3, "checkpoint": {"stack": REF, "latest": latest}}
    return lay_out(
        root, Path("x"), project="gpu-fleet", stack="prod", data=json.dumps(data).encode()
    )


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "team-state"
    monkeypatch.setenv("PULUMI_BACKEND_URL", f"file://{root}")
    return root


def test_adopted_stack_status_comes_from_its_state(
    project: Path, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stack(shared, {"worker_host": "203.0.113.7", "worker_user": "ubuntu"})
    dd = str(project)
    res = create("fleet", backend="pulumi", stack=REF, dream_dir=dd, probe=False)
    assert res.status in ("applied", "unclaimed"), res.to_json()
    assert res.next_action is not None and "connect -n fleet" in res.next_action.command  # type: ignore[union-attr]
    record = json.loads((project / ".dream/providers/fleet/provider.json").read_text())
    assert record["backend"] == "pulumi" and record["vendor"] == "pulumi-stack"
    assert record["id"].startswith("prv-")  # an identity of its own, not its folder's
    assert record["settings"]["pulumi"] == {
        "stack": REF,
        "backendUrl": f"file://{shared}",
        "adopted": True,
    }
    assert (project / ".dream/providers/fleet/pulumi/ADOPTED.md").is_file()
    assert not (project / ".dream/providers/fleet/pulumi/__main__.py").exists()

    # the backend is recorded: status no longer needs the environment
    monkeypatch.delenv("PULUMI_BACKEND_URL")
    st = status("fleet", dream_dir=dd, probe=False)
    assert st.status in ("applied", "unclaimed") and st.resources == 1
    assert st.outputs is not None and st.outputs["worker_host"] == "203.0.113.7"

    again = create("fleet", backend="pulumi", stack=REF, dream_dir=dd, probe=False)
    assert again.status == "exists"


def test_connect_targets_the_host_the_outputs_name(
    project: Path, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stack(shared, {"worker_host": "203.0.113.7", "worker_user": "ubuntu"})
    dd = str(project)
    create("fleet", backend="pulumi", stack=REF, dream_dir=dd, probe=False)
    monkeypatch.setenv("LAKESHORE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("LAKESHORE_TOKEN", "test-token")
    targets: list[Any] = []

    def factory(target: Any) -> Any:
        targets.append(target)
        raise RemoteError("stop here: this test checks the target only", kind="ssh")

    res = connect("fleet", dream_dir=dd, shell_factory=factory)
    assert res.status == "error"
    [target] = targets
    assert target.host == "203.0.113.7" and target.user == "ubuntu"


def test_plan_on_an_adopted_stack_hands_back_connect(project: Path, shared: Path) -> None:
    _stack(shared, {"worker_host": "203.0.113.7"})
    dd = str(project)
    create("fleet", backend="pulumi", stack=REF, dream_dir=dd, probe=False)
    res = plan("fleet", dream_dir=dd)
    assert res.status == "error" and res.kind == "adopted_stack"
    assert res.next_action is not None and "connect -n fleet" in res.next_action.command  # type: ignore[union-attr]


def test_destroy_refuses_an_adopted_stack(project: Path, shared: Path) -> None:
    from dreamlake.engine.backends.pulumi import BACKEND
    from dreamlake.engine.contract.errors import DreamlakeError

    _stack(shared, {"worker_host": "203.0.113.7"})
    create("fleet", backend="pulumi", stack=REF, dream_dir=str(project), probe=False)
    with pytest.raises(DreamlakeError) as ei:
        BACKEND.destroy(project / ".dream/providers/fleet", yes=True)
    assert ei.value.kind == "adopted_stack"


def test_apply_refuses_an_adopted_stack_before_anything_else(
    project: Path, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not ``no_plan`` (whose next action, plan, is refused too), and not a missing
    CLI: the refusal itself, naming connect."""
    from dreamlake.engine.backends.pulumi import BACKEND
    from dreamlake.engine.contract.errors import DreamlakeError

    _stack(shared, {"worker_host": "203.0.113.7"})
    create("fleet", backend="pulumi", stack=REF, dream_dir=str(project), probe=False)
    monkeypatch.setenv("PATH", str(project / "no-bin"))  # no pulumi CLI to be found
    with pytest.raises(DreamlakeError) as ei:
        BACKEND.apply(project / ".dream/providers/fleet")
    assert ei.value.kind == "adopted_stack"
    assert "connect -n fleet" in ei.value.next_action.command  # type: ignore[union-attr]


def test_a_stale_lock_on_an_adopted_stack_is_not_sent_to_plan(project: Path, shared: Path) -> None:
    """plan refuses an adopted stack, so the lock's advice is the team's own
    ``pulumi cancel`` on that stack, never ``dreamlake provider plan``."""
    from dreamlake.engine.backends.pulumi import BACKEND

    _stack(shared, {"worker_host": "203.0.113.7"})
    create("fleet", backend="pulumi", stack=REF, dream_dir=str(project), probe=False)
    locks = shared / ".pulumi/locks/organization/gpu-fleet/prod"
    locks.mkdir(parents=True)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a process of this host that has ended: the lock it left is stale
    lock = {"pid": gone.pid, "username": "ci", "hostname": socket.gethostname()}
    (locks / "a.json").write_text(json.dumps({**lock, "timestamp": "2026-11-30T09:00:00Z"}))
    state = BACKEND.observe_state(project / ".dream/providers/fleet")
    assert state.lock is not None and state.lock.state == "stale"
    detail = state.lock.detail or ""
    assert "dreamlake provider plan" not in detail
    assert "cancel --yes" in detail and REF in detail, detail


def test_suspend_writes_no_target_into_an_adopted_stack(project: Path, shared: Path) -> None:
    """The stack is the team's: no target is written (status would then call a running
    stack suspended), and the refusal says so."""
    from dreamlake.engine.verbs.suspend import suspend

    _stack(shared, {"worker_host": "203.0.113.7"})
    dd = str(project)
    create("fleet", backend="pulumi", stack=REF, dream_dir=dd, probe=False)
    res = suspend("fleet", yes=True, dream_dir=dd)
    assert res.status == "error" and res.kind == "adopted_stack", res.to_json()
    assert not list((project / ".dream/providers/fleet/pulumi").glob("Pulumi.*.y*ml"))
    assert status("fleet", dream_dir=dd, probe=False).status != "suspended"


def test_a_stack_on_a_remote_backend_is_connected_with_host(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A team's stack in S3 or Pulumi Cloud cannot be read from here: status says so
    and hands back connect (not plan, which refuses an adopted stack), and connect
    --host puts the daemon there."""
    monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://acme-pulumi-state")
    dd = str(project)
    create("fleet", backend="pulumi", stack=REF, dream_dir=dd, probe=False)
    st = status("fleet", dream_dir=dd, probe=False)
    assert st.status in ("applied", "unclaimed"), st.to_json()
    assert st.next_action is not None and "connect -n fleet" in st.next_action.command  # type: ignore[union-attr]
    assert any("outputs are not read here" in n for n in st.notes), st.notes

    asked = connect("fleet", dream_dir=dd)  # no output names a host: it asks for one
    assert asked.status == "needs_input" and [b.key for b in asked.blocking or []] == ["host"]

    monkeypatch.setenv("LAKESHORE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("LAKESHORE_TOKEN", "test-token")
    targets: list[Any] = []

    def factory(target: Any) -> Any:
        targets.append(target)
        raise RemoteError("stop here: this test checks the target only", kind="ssh")

    connect("fleet", dream_dir=dd, host="ubuntu@203.0.113.9", shell_factory=factory)
    [target] = targets
    assert target.host == "203.0.113.9" and target.user == "ubuntu"


def test_no_worker_host_is_said(project: Path, shared: Path) -> None:
    _stack(shared, {"cluster": "x"})
    res = create("fleet", backend="pulumi", stack=REF, dream_dir=str(project), probe=False)
    assert any("no worker_host" in n for n in res.notes), res.notes


def test_missing_stack_writes_nothing(project: Path, shared: Path) -> None:
    res = create("fleet", backend="pulumi", stack=REF, dream_dir=str(project), probe=False)
    assert res.status == "error" and res.kind == "stack_not_found"
    assert res.next_action is not None and res.next_action.kind == "shell"
    assert not (project / ".dream/providers/fleet").exists()


@pytest.mark.parametrize("ref", ["prod", "gpu-fleet/prod", "a//b", "a/b/c d"])
def test_stack_must_be_fully_named(project: Path, shared: Path, ref: str) -> None:
    res = create("fleet", backend="pulumi", stack=ref, dream_dir=str(project), probe=False)
    assert res.status == "error" and res.kind == "usage"
    assert not (project / ".dream/providers/fleet").exists()


def test_stack_takes_no_vendor(project: Path, shared: Path) -> None:
    res = create("fleet", "ec2", backend="pulumi", stack=REF, dream_dir=str(project), probe=False)
    assert res.status == "error" and res.kind == "usage"


def test_connect_without_host_names_the_missing_flag(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/pulumi.md's adopted stack on S3: connect without --host has nothing of its
    own to edit, so its next action names --host rather than the same command again."""
    monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://acme-pulumi-state")
    dd = str(project)
    create("fleet", backend="pulumi", stack="acme/gpu-fleet/prod", dream_dir=dd, probe=False)
    asked = connect("fleet", dream_dir=dd)
    assert asked.status == "needs_input" and [b.key for b in asked.blocking or []] == ["host"]
    assert asked.next_action is not None
    assert asked.next_action.command == (
        f"dreamlake provider connect -n fleet --host USER@HOST --dream-dir {dd}"
    )
    assert "--host" in (asked.blocking or [])[0].why  # type: ignore[operator]
