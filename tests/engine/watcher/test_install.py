"""``dreamlake provider watch --install`` under the daemon's supervisor ladder: where
this machine has neither a systemd user manager with linger nor systemd with sudo,
a tmux session runs ``.dream/watch.sh``, which takes the root's lock; installing
again restarts it; a watcher started by hand on the root is named and refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.watcher.lock import held_by, lock_path

DREAMLAKE = str(Path(sys.executable).parent / "dreamlake")


def _ladder() -> str | None:
    if shutil.which("tmux") is None:
        return None
    return supervise.choose(supervise.detect(LocalShell()))


pytestmark = pytest.mark.skipif(
    _ladder() != "tmux", reason="needs tmux as this machine's supervisor (no systemd here)"
)


def _install(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DREAMLAKE, "provider", "watch", "--all", "--install", "--json", "--interval", "5",
         "--drift-interval", "0", "--dream-dir", str(project)],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


def test_install_runs_the_watcher_under_tmux(project: Path, tmp_path: Path) -> None:
    env = {**os.environ, "LAKESHORE_URL": "http://127.0.0.1:9", "HOME": str(tmp_path)}
    env["TMUX_TMPDIR"] = str(tmp_path)  # a tmux server of this test's own
    done = _install(project, env)
    assert done.returncode == 0, (done.stdout, done.stderr)
    doc = json.loads(done.stdout)
    session = doc["session"]
    try:
        assert doc["supervisor"] == "tmux" and session.startswith("dreamlake-watch-")
        holder = held_by(lock_path(project / ".dream"))
        assert holder is not None and holder.pid == doc["holder"]["pid"]
        script = Path(doc["script"]).read_text()
        assert "provider watch --all --interval 5" in script and "LAKESHORE_TOKEN=" not in script

        redone = _install(project, env)  # installing again restarts it
        assert redone.returncode == 0, (redone.stdout, redone.stderr)
        again = json.loads(redone.stdout)
        assert again["session"] == session and again["holder"]["pid"] != holder.pid
    finally:
        subprocess.run(["tmux", "kill-server"], env=env, capture_output=True, check=False)

    by_hand = subprocess.Popen(
        [DREAMLAKE, "provider", "watch", "--all", "--json", "--dream-dir", str(project)],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert by_hand.stdout is not None and "watching" in by_hand.stdout.readline()
        refused = _install(project, env)
        assert refused.returncode == 1
        err = json.loads(refused.stdout)
        assert err["kind"] == "watcher_running" and err["holder"]["pid"] == by_hand.pid
    finally:
        by_hand.terminate()
        by_hand.wait(timeout=30)
