"""The engine's verbs on the pulumi backend, with the registered BACKEND driving
``FakeAutomation`` (a TEST DOUBLE for the pulumi CLI, see test_pulumi_backend):
create → needs_input → scaffolded → plan → ready → apply → applied → status."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest
from dreamlake.engine.backends.pulumi import BACKEND
from dreamlake.engine.backends.pulumi.project import PulumiProject
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status
from pulumi_helpers import FakeAutomation


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeAutomation:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stub = bindir / "pulumi"  # TEST DOUBLE file: found on PATH, never run
    stub.write_text("#!/bin/sh\nexit 99\n")
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    automation = FakeAutomation(changes={"create": 0, "same": 1})
    monkeypatch.setattr(BACKEND, "_automation", automation)
    return automation


def _resolve(stack_file: Path) -> None:
    text = stack_file.read_text()
    text = text.replace("# dreamlake:workdir: /var/lib/nymph", "dreamlake:workdir: /srv/nymph")
    text = text.replace("# dreamlake:queues: [default]", "dreamlake:queues: [default]")
    stack_file.write_text(text.replace("CHANGE-ME", "lab-box"))


def test_the_loop(project: Path, fake: FakeAutomation) -> None:
    dd = str(project)
    res = create("lab", "local", backend="pulumi", dream_dir=dd, probe=False)
    assert res.status == "needs_input"
    _resolve(Path(res.next_action.file))  # type: ignore[union-attr]
    assert (
        create("lab", "local", backend="pulumi", continue_=True, dream_dir=dd, probe=False).status
        == "scaffolded"
    )

    res = plan("lab", dream_dir=dd)
    assert res.status == "ready", res.to_json()
    assert res.next_action is not None and res.next_action.command.endswith(
        "apply -n lab --yes --dream-dir " + dd
    )
    assert status("lab", dream_dir=dd).status == "ready"

    assert apply("lab", yes=False, dream_dir=dd).status == "needs_input"
    assert not [c for c in fake.calls if c[0] == "up"]

    res = apply("lab", yes=True, dream_dir=dd)
    assert res.status in ("applied", "unclaimed"), res.to_json()
    st = status("lab", dream_dir=dd)
    assert st.status in ("applied", "unclaimed")
    assert st.outputs == {"worker_host": "localhost"} and st.resources == 0


def test_interrupted_apply_is_applying_and_apply_does_not_retry(
    project: Path, fake: FakeAutomation
) -> None:
    dd = str(project)
    res = create("lab", "local", backend="pulumi", dream_dir=dd, probe=False)
    _resolve(Path(res.next_action.file))  # type: ignore[union-attr]
    assert plan("lab", dream_dir=dd).status == "ready"
    stack = PulumiProject.of(project / ".dream/providers/lab").stack
    lock_dir = (
        project / ".dream/providers/lab/pulumi/.state/.pulumi/locks/organization/dreamlake" / stack
    )
    lock_dir.mkdir(parents=True)
    (project / ".dream/providers/lab/pulumi/.state/.pulumi/meta.yaml").write_text("version: 1\n")
    (lock_dir / "0b9e.json").write_text(
        json.dumps(
            {
                "pid": 2**22 + 12345,
                "username": "me",
                "hostname": socket.gethostname(),
                "timestamp": "2026-11-29T10:00:00Z",
            }
        )
    )
    st = status("lab", dream_dir=dd)
    assert st.status == "applying" and st.lock is not None and st.lock.state == "stale"
    assert st.next_action is not None and st.next_action.approval is True  # provision: gated
    res = apply("lab", yes=True, dream_dir=dd)
    # apply never retries an interrupted run's update: it plans again (plan is the
    # recovery: it clears the stale lock, saying so) and stops at ready
    assert res.status == "ready", res.to_json()
    assert any("taken over and released" in n for n in res.notes), res.notes
    assert not [c for c in fake.calls if c[0] == "up"]
