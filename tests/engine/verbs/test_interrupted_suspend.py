"""An interrupted ``suspend`` on a provider whose daemon install is gone never reads
``suspended``: while its record is there it is that suspend, interrupted (re-run
it); re-running it finds the kept state gone and says so, and from then on the
provider reads as having nothing kept — not ``suspended``.

A ``local`` provider on this machine with a hand-made applied state (outputs
only: no cloud behind it), a ``HOME`` with no daemon installed, and the real
local shell the suspend probes the host with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.status import status
from dreamlake.engine.verbs.suspend import suspend
from dreamlake.engine.world.intent import read_intent, write_intent

DEAD_PID = 2**22 + 17


def _state() -> str:
    outputs = {"worker_host": "localhost", "worker_name": "box"}
    return json.dumps(
        {
            "version": 4,
            "terraform_version": "1.11.4",
            "serial": 1,
            "lineage": "00000000-0000-0000-0000-000000000000",
            "outputs": {k: {"value": v, "type": "string"} for k, v in outputs.items()},
            "resources": [],
        }
    )


@pytest.fixture
def suspended_world(tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no daemon installed here
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path / "tmux"))  # no tmux server either
    (tmp_path / "home").mkdir()
    (tmp_path / "tmux").mkdir()
    name = "gone-box"
    create(name, "local", cwd=project, probe=False)
    d = project / ".dream/providers" / name
    (d / "terraform/terraform.tfvars").write_text(
        f'workdir = "{tmp_path}/work"\nqueues = ["default"]\nworker_name = "box"\n'
        'target_status = "suspended"\n'
    )
    (d / "terraform/terraform.tfstate").write_text(_state())
    return d


def test_an_interrupted_suspend_whose_install_is_gone_never_reads_suspended(
    suspended_world: Path, project: Path
) -> None:
    d = suspended_world
    name = d.name
    # the suspend was killed after it wrote the target, before it stopped anything
    write_intent(d, "suspend", step="suspend", pid=DEAD_PID)
    st = status(name, cwd=project)
    assert st.status == "applying" and st.exit_code == 0, st.to_json()
    assert st.lock is not None and st.lock.state == "stale" and st.lock.operation == "suspend"
    assert st.next_action is not None
    assert st.next_action.command == f"dreamlake provider suspend -n {name}"
    assert st.next_action.approval is None  # suspend is not gated by default

    again = suspend(name, cwd=project)
    assert again.status == "error" and again.kind == "unrecoverable", again.to_json()
    assert again.exit_code == 1  # it could not suspend what it was asked to
    it = read_intent(d)
    assert it is not None and it.outcome == "gone"

    after = status(name, cwd=project)
    assert after.status != "suspended", after.to_json()
    assert after.status in ("applied", "unclaimed")
    assert after.next_action is not None and " connect " in f"{after.next_action.command} "


def test_without_the_record_a_suspended_target_reads_suspended(
    suspended_world: Path, project: Path
) -> None:
    """The record is what changes the answer: the same world without it is the
    deliberate suspend status reads from the target."""
    assert status(suspended_world.name, cwd=project).status == "suspended"
