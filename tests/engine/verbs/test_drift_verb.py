"""``provider drift`` where there is nothing to check: no terraform runs, and the
answer says why, with a next action to follow."""

from __future__ import annotations

from pathlib import Path

from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.drift import drift


def test_nothing_applied_is_not_checked(project: Path) -> None:
    dd = str(project)
    create("lab", "local", dream_dir=dd, probe=False)
    res = drift("lab", dream_dir=dd)
    assert res.status == "needs_input" and res.exit_code == 0, res.to_json()
    assert res.files is None and res.drift is None
    assert "drift not checked: nothing is applied" in " ".join(res.notes)
    assert not (project / ".dream/providers/lab/terraform/tfplan.drift.json").exists()


def test_an_adopted_host_has_no_state_to_compare(project: Path) -> None:
    dd = str(project)
    create("box", "ssh", dream_dir=dd, probe=False)
    res = drift("box", dream_dir=dd)
    assert res.status == "error" and res.kind == "usage", res.to_json()
    assert res.next_action is not None and "provider connect -n box" in res.next_action.command


def test_an_unknown_provider_is_an_error_with_a_next_action(project: Path) -> None:
    res = drift("nope", dream_dir=str(project))
    assert res.status == "error" and res.kind == "unknown_provider"
    assert res.next_action is not None
