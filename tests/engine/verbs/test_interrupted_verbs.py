"""Interrupted verbs recover to where they were going.

A ``destroy --yes`` interrupted at each point (before the daemon is stopped, before
terraform starts, in the middle of terraform's destroy, after it finished) — and a
real ``kill -9`` of the whole process group while terraform destroys — is
recognised as an interrupted destroy by every verb: ``applying``, the lock
``stale``, the next action ``destroy --yes`` flagged for a person's yes. An agent
that follows the next actions (saying yes where a person agreed) ends with the
provider destroyed: never re-applied, never reconnected.

Against the real terraform (>= 1.4, for the plugin-free ``terraform_data``) and the
shipped ``local`` template; provider names are unique per test."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.backends.terraform.binaries import at_least, available
from dreamlake.engine.backends.terraform.lockinfo import LOCK_INFO, probe_fcntl
from dreamlake.engine.contract.result import ProviderLifecycleResult
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.destroy import destroy
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.reconcile import reconcile
from dreamlake.engine.verbs.status import status
from dreamlake.engine.world.intent import INTENT_FILE, read_intent, write_intent

NEW = [(v, p) for v, p in available() if at_least(v, "1.4.0")]
GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'
TWO = 'resource "terraform_data" "a" {}\nresource "terraform_data" "b" {\n  input = "b"\n}\n'
SLOW_DESTROY = (
    'resource "terraform_data" "a" {}\n'
    'resource "terraform_data" "slow" {\n'
    "  depends_on = [terraform_data.a]\n"
    '  provisioner "local-exec" {\n'
    "    when    = destroy\n"
    '    command = "sleep 60"\n'
    "  }\n"
    "}\n"
)
DEAD_PID = 2**22 + 17  # above pid_max's default: no process has it

pytestmark = pytest.mark.slow


@pytest.fixture
def tf(monkeypatch: pytest.MonkeyPatch) -> str:
    if not NEW:
        pytest.skip("needs terraform >= 1.4 (the builtin terraform_data resource)")
    _version, path = NEW[-1]
    monkeypatch.setenv("TERRAFORM_BINARY", path)
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    return path


def applied(project: Path, extra: str = TWO) -> tuple[str, Path]:
    name = f"intr-{uuid.uuid4().hex[:8]}"
    create(name, "local", dream_dir=str(project), probe=False)
    pdir = project / ".dream/providers" / name
    (pdir / "terraform/terraform.tfvars").write_text(GOOD)
    (pdir / "terraform/extra.tf").write_text(extra)
    assert plan(name, dream_dir=str(project)).status == "ready"
    assert apply(name, yes=True, dream_dir=str(project)).status == "applied"
    return name, pdir


def follow(name: str, project: Path, start: ProviderLifecycleResult) -> list[str]:
    """An agent following next actions; a person says yes to each flagged one. Returns
    the commands run. Stops at a null next action, at status/plan/connect answering
    the same twice, or after ten steps."""
    verbs: dict[str, Any] = {
        "destroy": lambda yes: destroy(name, yes=yes, dream_dir=str(project)),
        "apply": lambda yes: apply(name, yes=yes, dream_dir=str(project)),
        "plan": lambda _yes: plan(name, dream_dir=str(project)),
        "status": lambda _yes: status(name, dream_dir=str(project)),
        "connect": lambda _yes: connect(name, dream_dir=str(project), watch=0),
        "reconcile": lambda yes: reconcile(name, yes=yes, dream_dir=str(project)),
    }
    ran: list[str] = []
    res = start
    for _ in range(10):
        nxt = res.next_action
        if nxt is None or res.status == "scaffolded":
            break
        words = shlex.split(nxt.command)
        verb = words[2]
        ran.append(verb + (" --yes" if "--yes" in words else ""))
        res = verbs[verb]("--yes" in words)
    return ran


def assert_interrupted_destroy(res: ProviderLifecycleResult, name: str, project: Path) -> None:
    assert res.status == "applying" and res.exit_code == 0, res.to_json()
    assert res.lock is not None and res.lock.state == "stale" and res.lock.operation == "destroy"
    assert res.next_action is not None and res.next_action.approval is True
    assert res.next_action.command == (
        f"dreamlake provider destroy -n {name} --yes --dream-dir {project}"
    )


def assert_destroyed(name: str, pdir: Path, project: Path) -> None:
    st = status(name, dream_dir=str(project))
    assert st.status == "scaffolded" and not st.resources, st.to_json()
    assert not (pdir / INTENT_FILE).exists()
    assert not (pdir / "terraform" / LOCK_INFO).exists()


def interrupt(monkeypatch: pytest.MonkeyPatch, target: str, after: bool = False) -> None:
    """Interrupt destroy --yes at ``target`` (a function it calls): before it runs,
    or after it ran (``after``), as a signal would (not an ordinary error)."""
    import dreamlake.engine.backends.terraform.backend as tfb
    import dreamlake.engine.daemon.stop as dctl

    owner, attr = {
        "stop_daemon": (dctl, "stop_daemon"),
        "terraform": (tfb.TerraformBackend, "destroy"),
    }[target]
    real = getattr(owner, attr)

    def stopped(*a: Any, **kw: Any) -> Any:
        if after:
            real(*a, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(owner, attr, stopped)


@pytest.mark.parametrize(
    ("target", "after"),
    [("stop_daemon", False), ("terraform", False), ("terraform", True)],
    ids=["before-the-daemon-stops", "before-terraform", "after-terraform"],
)
def test_an_interrupted_destroy_ends_destroyed_by_following_next_actions(
    tf: str, project: Path, monkeypatch: pytest.MonkeyPatch, target: str, after: bool
) -> None:
    name, pdir = applied(project)
    with monkeypatch.context() as m:
        interrupt(m, target, after)
        with pytest.raises(KeyboardInterrupt):
            destroy(name, yes=True, dream_dir=str(project))
    it = read_intent(pdir)
    assert it is not None and it.verb == "destroy" and it.interrupted
    st = status(name, dream_dir=str(project))
    assert_interrupted_destroy(st, name, project)
    # every verb gives the same answer, and none of them re-applies or reconnects
    for other in (
        plan(name, dream_dir=str(project)),
        apply(name, yes=True, dream_dir=str(project)),
        connect(name, dream_dir=str(project), watch=0),
        reconcile(name, yes=True, dream_dir=str(project)),
    ):
        assert_interrupted_destroy(other, name, project)
        assert any("did nothing: a destroy was interrupted" in n for n in other.notes), other.notes
    ran = follow(name, project, st)
    assert ran == ["destroy --yes"], ran
    assert_destroyed(name, pdir, project)


def test_a_stale_lock_mid_destroy_is_that_destroy_and_the_takeover_is_said(
    tf: str, project: Path
) -> None:
    """Terraform killed in the middle: its lock record stays, nothing holds the lock."""
    name, pdir = applied(project)
    write_intent(pdir, "destroy", yes=True, step="deprovision", pid=DEAD_PID)
    info = {
        "ID": "x",
        "Operation": "OperationTypeApply",
        "Info": "",
        "Who": "someone@here",
        "Version": "1.11.4",
        "Created": "2026-12-01T18:00:00Z",
        "Path": "terraform.tfstate",
    }
    (pdir / "terraform" / LOCK_INFO).write_text(json.dumps(info))
    st = status(name, dream_dir=str(project))
    assert_interrupted_destroy(st, name, project)
    assert st.lock is not None and st.lock.path and st.lock.path.endswith(LOCK_INFO)
    res = destroy(name, yes=True, dream_dir=str(project))
    assert res.status == "scaffolded", res.to_json()
    assert any("was taken over and released" in n for n in res.notes), res.notes
    assert_destroyed(name, pdir, project)


def test_a_stale_lock_without_a_record_is_an_interrupted_apply_everywhere(
    tf: str, project: Path
) -> None:
    """A run the engine did not start (terraform by hand, killed): every verb says the
    same — re-run the apply — and plan never clears the lock without saying so."""
    name, pdir = applied(project)
    (pdir / "terraform" / LOCK_INFO).write_text(json.dumps({"Operation": "OperationTypeApply"}))
    again = f"dreamlake provider apply -n {name} --yes --dream-dir {project}"
    for res in (
        status(name, dream_dir=str(project)),
        connect(name, dream_dir=str(project), watch=0),
        reconcile(name, dream_dir=str(project)),
    ):
        assert res.status == "applying" and res.lock is not None and res.lock.state == "stale"
        assert res.next_action is not None and res.next_action.command == again
        assert res.next_action.approval is True
    planned = plan(name, dream_dir=str(project))
    assert any("was taken over and released" in n for n in planned.notes), planned.notes
    assert not (pdir / "terraform" / LOCK_INFO).exists()


def test_an_interrupted_apply_is_re_run_as_an_apply(tf: str, project: Path) -> None:
    name, pdir = applied(project)
    (pdir / "terraform/extra.tf").write_text(TWO + 'resource "terraform_data" "c" {}\n')
    assert plan(name, dream_dir=str(project)).status == "ready"
    write_intent(pdir, "apply", yes=True, step="provision", pid=DEAD_PID)
    st = status(name, dream_dir=str(project))
    assert st.status == "applying" and st.lock is not None and st.lock.operation == "apply"
    assert st.next_action is not None and st.next_action.approval is True
    assert st.next_action.command.startswith(f"dreamlake provider apply -n {name} --yes")
    res = apply(name, yes=True, dream_dir=str(project))
    assert res.status == "applied" and res.resources == 3, res.to_json()
    assert read_intent(pdir) is None


def test_kill_9_during_a_real_terraform_destroy(tf: str, project: Path) -> None:
    """The whole process group of ``dreamlake provider destroy --yes`` killed while
    terraform runs a destroy-time provisioner: what is left is read as that destroy."""
    name, pdir = applied(project, SLOW_DESTROY)
    tf_dir = pdir / "terraform"
    cli = Path(sys.executable).parent / "dreamlake"
    if not cli.is_file():
        pytest.skip(f"needs the console script {cli}")
    env = dict(os.environ, PATH=f"{os.environ.get('PATH', '')}:{cli.parent}")
    proc = subprocess.Popen(
        [str(cli), "provider", "destroy", "-n", name, "--yes", "--dream-dir", str(project)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (
            (tf_dir / LOCK_INFO).exists() and probe_fcntl(tf_dir / "terraform.tfstate").held
        ):
            assert proc.poll() is None, f"destroy exited early ({proc.returncode})"
            assert time.monotonic() < deadline, "terraform never took the lock"
            time.sleep(0.2)
        time.sleep(1.0)  # into the provisioner's sleep
        assert status(name, dream_dir=str(project)).lock.state == "held"  # type: ignore[union-attr]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # SIGKILL reaches terraform at once but it exits (and drops its state lock) a
    # moment later; only the reaped dreamlake process is waited for above
    gone = time.monotonic() + 30
    while probe_fcntl(tf_dir / "terraform.tfstate").held:
        assert time.monotonic() < gone, "terraform outlived the killed process group"
        time.sleep(0.1)
    st = status(name, dream_dir=str(project))
    assert_interrupted_destroy(st, name, project)
    # the recovery re-runs the destroy; the slow provisioner runs again, so make it quick
    (tf_dir / "extra.tf").write_text(SLOW_DESTROY.replace("sleep 60", "true"))
    ran = follow(name, project, st)
    assert ran and ran[0] == "destroy --yes" and "apply --yes" not in ran, ran
    assert "connect" not in ran, ran
    assert_destroyed(name, pdir, project)
