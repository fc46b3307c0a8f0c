"""``destroy`` against the real terraform and the shipped ``local`` template, with
two plugin-free ``terraform_data`` resources added (terraform >= 1.4): a preview
that destroys nothing, a destroy that leaves the scaffold so plan + apply bring it
back, a lock held by another run, and a destroy that fails.

Provider names are unique per test: destroying a ``local`` provider stops the tmux
session / units named after it on this machine."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from dreamlake.cli.render import render
from dreamlake.engine.backends.terraform.binaries import at_least, available
from dreamlake.engine.backends.terraform.lockinfo import LOCK_INFO, probe_fcntl
from dreamlake.engine.backends.terraform.tfexec import DESTROY_PLAN_FILE
from dreamlake.engine.contract.result import EditThenContinue, Run
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.destroy import destroy
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status

NEW = [(v, p) for v, p in available() if at_least(v, "1.4.0")]
GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'
TWO = 'resource "terraform_data" "a" {}\nresource "terraform_data" "b" {\n  input = "b"\n}\n'

pytestmark = pytest.mark.slow


@pytest.fixture
def tf(monkeypatch: pytest.MonkeyPatch) -> str:
    if not NEW:
        pytest.skip("needs terraform >= 1.4 (the builtin terraform_data resource)")
    _version, path = NEW[-1]
    monkeypatch.setenv("TERRAFORM_BINARY", path)
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    return path


def unique() -> str:
    return f"dstr-{uuid.uuid4().hex[:8]}"


def applied(project: Path, extra: str = TWO) -> tuple[str, Path]:
    name = unique()
    create(name, "local", dream_dir=str(project), probe=False)
    pdir = project / ".dream/providers" / name
    (pdir / "terraform/terraform.tfvars").write_text(GOOD)
    (pdir / "terraform/extra.tf").write_text(extra)
    assert plan(name, dream_dir=str(project)).status == "ready"
    res = apply(name, yes=True, dream_dir=str(project))
    assert res.status == "applied", res.to_json()
    return name, pdir


def yes_cmd(name: str, project: Path) -> str:
    return f"dreamlake provider destroy -n {name} --yes --dream-dir {project}"


def test_without_yes_nothing_is_destroyed(tf: str, project: Path) -> None:
    name, pdir = applied(project)
    state = pdir / "terraform/terraform.tfstate"
    before = state.stat().st_mtime_ns
    res = destroy(name, dream_dir=str(project))
    assert res.status == "needs_input" and res.exit_code == 0 and res.files == []
    assert res.plan is not None and res.plan.destroy == 2  # a real destroy plan's counts
    assert res.next_action == Run(command=yes_cmd(name, project), approval=True)
    assert (
        state.stat().st_mtime_ns == before and not (pdir / "terraform" / DESTROY_PLAN_FILE).exists()
    )
    assert status(name, dream_dir=str(project)).resources == 2
    prose = render(res)
    assert "nothing was destroyed" in prose and "needs a person's yes" in prose


def test_yes_destroys_and_plan_apply_bring_it_back(tf: str, project: Path) -> None:
    name, pdir = applied(project)
    tfvars = (pdir / "terraform/terraform.tfvars").read_text()
    res = destroy(name, yes=True, dream_dir=str(project))
    assert res.status == "scaffolded" and res.exit_code == 0, res.to_json()
    assert res.plan is not None and res.plan.destroy == 2
    assert res.next_action == Run(
        command=f"dreamlake provider plan -n {name} --dream-dir {project}"
    )
    assert str(pdir / "terraform/terraform.tfstate") in (res.files or [])
    # the scaffold and the decisions are kept; the world says scaffolded
    assert (pdir / "terraform/terraform.tfvars").read_text() == tfvars
    assert (pdir / "provider.json").is_file()
    st = status(name, dream_dir=str(project))
    assert st.status == "scaffolded" and not st.resources
    # a second destroy has nothing to do
    again = destroy(name, yes=True, dream_dir=str(project))
    assert again.status == "scaffolded" and again.files == []
    assert any("nothing to destroy" in n for n in again.notes)
    # and plan + apply bring it back
    back = plan(name, dream_dir=str(project))
    assert back.status == "ready" and back.plan is not None and back.plan.add == 2
    assert apply(name, yes=True, dream_dir=str(project)).status == "applied"


def test_a_held_lock_is_applying_and_destroys_nothing(tf: str, project: Path) -> None:
    name, pdir = applied(project)
    tf_dir = pdir / "terraform"
    env = {k: v for k, v in os.environ.items() if k not in ("TF_IN_AUTOMATION", "TF_INPUT")}
    env["CHECKPOINT_DISABLE"] = "1"
    by_hand = subprocess.Popen(
        [tf, "apply", "-no-color", "-replace=terraform_data.a"],
        cwd=tf_dir,
        env=env,
        stdin=subprocess.PIPE,  # never answered: it waits at its prompt, holding the lock
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (
            (tf_dir / LOCK_INFO).exists() and probe_fcntl(tf_dir / "terraform.tfstate").held
        ):
            assert by_hand.poll() is None and time.monotonic() < deadline, "no lock taken"
            time.sleep(0.2)
        for yes in (False, True):
            res = destroy(name, yes=yes, dream_dir=str(project))
            assert res.status == "applying" and res.exit_code == 0, res.to_json()
            assert res.lock is not None and res.lock.state == "held"
            # One answer whoever asks: the run in flight (an apply by hand) is the one
            # to re-run; destroy says it did nothing.
            again = f"dreamlake provider apply -n {name} --yes --dream-dir {project}"
            assert res.next_action == Run(command=again, approval=True)
            assert any("destroy did nothing: an apply is in flight" in n for n in res.notes)
    finally:
        os.killpg(by_hand.pid, signal.SIGKILL)
        by_hand.wait()
    assert status(name, dream_dir=str(project)).resources == 2


def test_a_failing_destroy_is_an_error_whose_recovery_is_plan(tf: str, project: Path) -> None:
    refuses = (
        'resource "terraform_data" "stubborn" {\n'
        '  provisioner "local-exec" {\n'
        "    when    = destroy\n"
        '    command = "exit 3"\n'
        "  }\n"
        "}\n"
    )
    name, pdir = applied(project, refuses)
    res = destroy(name, yes=True, dream_dir=str(project))
    assert res.status == "error" and res.exit_code == 1 and res.kind == "terraform", res.to_json()
    assert res.next_action == EditThenContinue(
        file=str(pdir / "terraform"),
        command=f"dreamlake provider plan -n {name} --dream-dir {project}",
    )
    assert not (pdir / "terraform" / DESTROY_PLAN_FILE).exists()


def test_an_apply_that_failed_part_way_is_an_error_listing_what_it_left(
    tf: str, project: Path
) -> None:
    name = unique()
    create(name, "local", dream_dir=str(project), probe=False)
    pdir = project / ".dream/providers" / name
    (pdir / "terraform/terraform.tfvars").write_text(GOOD)
    (pdir / "terraform/extra.tf").write_text(
        'resource "terraform_data" "ok" {}\n'
        'resource "terraform_data" "bad" {\n'
        "  depends_on = [terraform_data.ok]\n"
        '  provisioner "local-exec" {\n'
        '    command = "exit 3"\n'
        "  }\n"
        "}\n"
    )
    assert plan(name, dream_dir=str(project)).status == "ready"
    assert apply(name, yes=True, dream_dir=str(project)).status == "error"
    st = status(name, dream_dir=str(project))
    # status found a failure in the world and said so: a coherent answer, rc 0
    assert st.status == "error" and st.exit_code == 0 and st.kind == "partial_apply", st.to_json()
    assert "terraform_data.ok" in (st.error or "")
    plan_again = f"dreamlake provider plan -n {name} --dream-dir {project}"
    assert st.next_action == EditThenContinue(file=str(pdir / "terraform"), command=plan_again)
    # connect does not put a daemon on it
    assert connect(name, dream_dir=str(project)).status == "error"
    # fixing the cause and planning again is the way out
    (pdir / "terraform/extra.tf").write_text('resource "terraform_data" "ok" {}\n')
    assert plan(name, dream_dir=str(project)).status in ("ready", "applied", "unclaimed")
    assert status(name, dream_dir=str(project)).status != "error"
