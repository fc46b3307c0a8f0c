"""Stopping a daemon under tmux (the real tmux on this machine): a suspended daemon,
whose pane is already dead and kept (remain-on-exit), is closed at once rather than
after the grace a live daemon gets to deregister."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from dreamlake.engine.daemon import stop as daemonctl
from dreamlake.engine.remote import LocalShell

TMUX = shutil.which("tmux")


def _has(session: str) -> bool:
    return subprocess.run([str(TMUX), "has-session", "-t", f"={session}"]).returncode == 0


@pytest.mark.skipif(TMUX is None, reason="needs tmux (apt-get install -y tmux)")
def test_a_suspended_tmux_session_is_closed_without_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider = f"dctl-{uuid.uuid4().hex[:8]}"
    session = f"nymph-{provider}"
    subprocess.run([str(TMUX), "new-session", "-d", "-s", session, "sleep 600"], check=True)
    try:
        # Suspended: the daemon exited, its pane kept dead under the session.
        subprocess.run(
            [str(TMUX), "set-option", "-w", "-t", f"={session}:", "remain-on-exit", "on"],
            check=True,
        )
        subprocess.run([str(TMUX), "respawn-pane", "-k", "-t", f"={session}:", "true"], check=True)
        # A grace far longer than the run may take: only a stop that sees the dead
        # pane finishes in time.
        monkeypatch.setattr(daemonctl, "GRACE_SECONDS", 3600.0)
        shell = LocalShell()
        try:
            out = shell.run(daemonctl.stop_commands(provider, remove=False), timeout=20).stdout
        finally:
            shell.close()
        assert "stopped=tmux" in out
        assert not _has(session)
    finally:
        subprocess.run([str(TMUX), "kill-session", "-t", f"={session}"], capture_output=True)


def test_an_adopted_hosts_target_is_the_one_connect_and_suspend_reach(tmp_path: Path) -> None:
    """destroy stops the daemon on the host adopt.json names, read as suspend reads it:
    user, port and an identity file relative to the provider's folder."""
    from dreamlake.engine.daemon.host import host_target
    from dreamlake.engine.remote.ssh import SSHTarget
    from dreamlake.engine.verbs.create import create
    from dreamlake.engine.world.observe import observe
    from dreamlake.engine.world.paths import find_root

    root = tmp_path / "proj"
    root.mkdir()
    create("lab", "ssh", dream_dir=str(root), probe=False)
    pdir = root / ".dream/providers/lab"
    data = json.loads((pdir / "adopt.json").read_text())
    data.update(host="ops.internal", user="ops", port=2222, identity_file="keys/id")
    (pdir / "adopt.json").write_text(json.dumps(data))
    obs = observe("lab", find_root(str(root)), str(root), probe=False, claims=False)
    want = SSHTarget("ops.internal", "ops", 2222, identity_file=str(pdir / "keys/id"))
    assert daemonctl.daemon_target(obs) == (False, want) and host_target(obs) == want

    data["host"] = ""
    (pdir / "adopt.json").write_text(json.dumps(data))
    obs = observe("lab", find_root(str(root)), str(root), probe=False, claims=False)
    assert daemonctl.daemon_target(obs) is None
