"""``reconcile`` towards ``active`` from nothing stops at ``ready`` first (the real
terraform, the shipped ``local`` template): it plans — which costs nothing — and
offers ``apply --yes`` for that plan, never a ``reconcile --yes`` that would plan
and apply in one step without the plan being seen. A provider whose plan needs a
variable answers what plan answers. Only with ``--yes`` over a fresh saved plan
(the one ``ready`` showed) is anything applied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.reconcile import reconcile, reconcile_all
from dreamlake.engine.verbs.status import status

BINARIES = available()
GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'

pytestmark = pytest.mark.skipif(not BINARIES, reason="needs a terraform binary")


@pytest.fixture(autouse=True)
def _tf(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TERRAFORM_BINARY", BINARIES[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def _scaffold(project: Path, name: str, extra_tf: str = "") -> Path:
    create(name, "local", dream_dir=str(project), probe=False)
    pdir = project / ".dream/providers" / name
    (pdir / "terraform/terraform.tfvars").write_text(GOOD)
    if extra_tf:
        with open(pdir / "terraform/variables.tf", "a") as f:
            f.write(extra_tf)
    return pdir


def test_reconcile_from_nothing_stops_at_ready(project: Path) -> None:
    pdir = _scaffold(project, "lab")
    dd = str(project)
    res = reconcile("lab", dream_dir=dd)
    assert res.status == "ready", (res.to_json(), res.notes)
    assert res.next_action is not None
    assert res.next_action.command == f"dreamlake provider apply -n lab --yes --dream-dir {dd}"
    assert res.next_action.approval is True
    assert not (pdir / "terraform/terraform.tfstate").exists()  # nothing applied
    # with the saved plan ready showed, --yes applies exactly that plan
    assert status("lab", dream_dir=dd).status == "ready"
    done = reconcile("lab", yes=True, dream_dir=dd)
    assert done.status in ("applied", "unclaimed"), (done.to_json(), done.notes)
    assert (pdir / "terraform/terraform.tfstate").exists()


def test_reconcile_yes_from_nothing_still_stops_at_ready(project: Path) -> None:
    pdir = _scaffold(project, "lab")
    res = reconcile("lab", yes=True, dream_dir=str(project))
    assert res.status == "ready", (res.to_json(), res.notes)
    assert not (pdir / "terraform/terraform.tfstate").exists()


def test_a_plan_that_needs_a_variable_is_answered_as_plan_answers(project: Path) -> None:
    _scaffold(project, "lab", '\nvariable "team_budget" {\n  type = string\n}\n')
    res = reconcile("lab", dream_dir=str(project))
    assert res.status == "needs_input", (res.to_json(), res.notes)
    assert [b.key for b in res.blocking or []] == ["team_budget"]
    assert res.next_action is not None and "--yes" not in res.next_action.command
    # --all answers each provider the same way
    (only,) = reconcile_all(dream_dir=str(project))
    assert only.status == "needs_input"
