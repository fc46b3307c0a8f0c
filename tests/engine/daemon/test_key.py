"""The daemon keyed by the provider's identity: the key, the shell lines that find an
older name-keyed install only when it is this provider's, and the move of such an
install under the identity key (the real tmux and a real shell on this machine, in
a HOME of the test's own)."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from dreamlake.engine.daemon import stop as daemonctl
from dreamlake.engine.daemon.key import DaemonKey, key_of
from dreamlake.engine.daemon.probe import parse_running, running_script
from dreamlake.engine.daemon.suspend import daemon_state
from dreamlake.engine.remote import LocalShell

TMUX = shutil.which("tmux")


def test_the_key_is_the_identity_when_it_is_a_plain_word() -> None:
    ident = f"prv-{uuid.uuid4().hex}"
    assert key_of(ident) == ident
    odd = key_of("my lab/../x")
    assert odd.startswith("prv-") and len(odd) == 36 and "/" not in odd
    dk = DaemonKey("lab", ident)
    assert (dk.key, dk.legacy, dk.session, dk.unit) == (
        ident,
        "lab",
        f"nymph-{ident}",
        f"nymph-{ident}.service",
    )


def _install(home: Path, key: str, identity: str | None) -> Path:
    d = home / ".dreamlake" / "nymph" / key
    d.mkdir(parents=True)
    cfg: dict[str, str] = {"provider": "lab", "workdir": str(d)}
    if identity:
        cfg["identity"] = identity
    (d / "nymph.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (d / "run.sh").write_text("#!/bin/sh\nexec sleep 600\n")
    (d / "run.sh").chmod(0o755)
    return d


def _sh(home: Path, script: str) -> str:
    shell = LocalShell()
    try:
        return shell.run(f"export HOME={home}\n{script}", timeout=30).stdout
    finally:
        shell.close()


def test_an_older_install_counts_only_when_it_names_this_identity(tmp_path: Path) -> None:
    mine, theirs = f"prv-{uuid.uuid4().hex}", f"prv-{uuid.uuid4().hex}"
    dk = DaemonKey("lab", mine)
    pick = dk.pick_script() + 'echo "k=$k"\n'
    assert _sh(tmp_path, pick).strip() == f"k={mine}"  # nothing installed: the new key
    _install(tmp_path, "lab", theirs)  # another root's `lab`
    assert _sh(tmp_path, pick).strip() == f"k={mine}"
    shutil.rmtree(tmp_path / ".dreamlake")
    _install(tmp_path, "lab", mine)  # this provider's, from an older dreamlake
    assert _sh(tmp_path, pick).strip() == "k=lab"
    _install(tmp_path, mine, mine)  # once moved, the identity key wins
    assert _sh(tmp_path, pick).strip() == f"k={mine}"


@pytest.mark.skipif(TMUX is None, reason="needs tmux (apt-get install -y tmux)")
def test_the_next_connect_moves_only_this_providers_older_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))  # a tmux server of this test's own
    home = tmp_path / "home"
    mine, theirs = f"prv-{uuid.uuid4().hex}", f"prv-{uuid.uuid4().hex}"
    name = f"lab-{uuid.uuid4().hex[:6]}"
    dk = DaemonKey(name, mine)
    old = _install(home, name, mine)
    subprocess.run(["tmux", "new-session", "-d", "-s", f"nymph-{name}", "sleep 600"], check=True)
    try:
        # status, suspend and resume find it under the old key until it is moved
        shell = LocalShell()
        out = shell.run(f"export HOME={home}\n" + running_script(dk, systemd=False)).stdout
        assert parse_running(out) == "tmux"
        monkeypatch.setenv("HOME", str(home))
        seen = daemon_state(shell, dk)
        assert (seen.key, seen.state, seen.installed) == (name, "running", True)
        assert seen.install_dir == str(old)

        monkeypatch.setattr(daemonctl, "GRACE_SECONDS", 1.0)
        note = daemonctl.move_legacy(shell, dk)
        assert note is not None and f"nymph/{mine}" in note and f"nymph-{name}" in note
        new = home / ".dreamlake" / "nymph" / mine
        assert not old.exists() and (new / "nymph.json").is_file()
        assert subprocess.run(["tmux", "has-session", "-t", f"=nymph-{name}"]).returncode != 0
        assert daemon_state(shell, dk).key == mine
        assert daemonctl.move_legacy(shell, dk) is None  # nothing left to move

        # another root's install of the same name is left alone, its session running
        _install(home, name, theirs)
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", f"nymph-{name}", "sleep 600"], check=True
        )
        assert daemonctl.move_legacy(shell, dk) is None
        assert (home / ".dreamlake" / "nymph" / name / "nymph.json").is_file()
        assert subprocess.run(["tmux", "has-session", "-t", f"=nymph-{name}"]).returncode == 0
        shell.close()
    finally:
        subprocess.run(["tmux", "kill-server"], capture_output=True, check=False)


@pytest.mark.skipif(TMUX is None, reason="needs tmux (apt-get install -y tmux)")
def test_destroy_finds_an_older_install_only_when_it_is_this_providers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))  # a tmux server of this test's own
    monkeypatch.setattr(daemonctl, "GRACE_SECONDS", 1.0)
    home = tmp_path / "home"
    mine, theirs = f"prv-{uuid.uuid4().hex}", f"prv-{uuid.uuid4().hex}"
    name = f"lab-{uuid.uuid4().hex[:6]}"
    try:
        _install(home, name, theirs)  # another root's `lab`: destroy leaves it be
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", f"nymph-{name}", "sleep 600"], check=True
        )
        out = _sh(home, daemonctl.stop_commands(DaemonKey(name, mine), remove=True))
        assert "stopped=" not in out and "removed=" not in out
        assert (home / ".dreamlake" / "nymph" / name).is_dir()
        assert subprocess.run(["tmux", "has-session", "-t", f"=nymph-{name}"]).returncode == 0
        # this provider's own older install: stopped and removed under its old key
        out = _sh(home, daemonctl.stop_commands(DaemonKey(name, theirs), remove=True))
        assert "stopped=tmux" in out and "removed=install" in out
        assert not (home / ".dreamlake" / "nymph" / name).exists()
    finally:
        subprocess.run(["tmux", "kill-server"], capture_output=True, check=False)
