"""One watcher per root, on real processes: a second ``dreamlake provider watch``
names the holder and exits 1 (a JSON error with a nextAction under ``--json``);
``kill -9`` of the holder leaves nothing that stops the next one; SIGTERM ends the
watcher cleanly and lets go of the root."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from dreamlake.engine.watcher.lock import WatcherRunning, WatchLock, held_by, lock_path

DREAMLAKE = str(Path(sys.executable).parent / "dreamlake")


def _env(tmp: Path) -> dict[str, str]:
    # No control plane here: an unreachable one, asked once per pass, briefly.
    return {**os.environ, "LAKESHORE_URL": "http://127.0.0.1:9", "HOME": str(tmp)}


def _start(project: Path, tmp: Path) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    proc = subprocess.Popen(
        [DREAMLAKE, "provider", "watch", "--all", "--interval", "30", "--json",
         "--drift-interval", "0", "--dream-dir", str(project)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp),
    )  # fmt: skip
    assert proc.stdout is not None
    first = json.loads(proc.stdout.readline())
    assert first["event"] == "watching", first
    return proc, first


def _once(project: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DREAMLAKE, "provider", "watch", "--all", "--once", "--dream-dir", str(project), *extra],
        capture_output=True, text=True, timeout=60, env=_env(tmp),
    )  # fmt: skip


def test_a_second_watcher_names_the_holder_and_kill_9_leaves_nothing(
    project: Path, tmp_path: Path
) -> None:
    proc, first = _start(project, tmp_path)
    try:
        pid = first["holder"]["pid"]
        assert pid == proc.pid
        assert held_by(lock_path(project / ".dream")) is not None

        second = _once(project, tmp_path, "--json")
        assert second.returncode == 1, second
        (doc,) = [json.loads(line) for line in second.stdout.splitlines()]
        assert doc["kind"] == "watcher_running" and doc["holder"]["pid"] == pid
        assert f"pid {pid}" in doc["error"]
        assert doc["nextAction"]["kind"] == "run" and doc["nextAction"]["command"]
        prose = _once(project, tmp_path)
        assert prose.returncode == 1 and f"pid {pid}" in prose.stderr and "next: " in prose.stderr
    finally:
        proc.kill()  # kill -9: no cleanup of any kind
        proc.wait()
    assert json.loads(lock_path(project / ".dream").read_text())["pid"] == pid  # left behind
    assert held_by(lock_path(project / ".dream")) is None  # but nobody holds it
    again = _once(project, tmp_path, "--json")
    assert again.returncode == 0, again
    events = [json.loads(line) for line in again.stdout.splitlines()]
    assert events[0]["holder"]["pid"] != pid and events[-1]["event"] == "stopped"


def test_sigterm_ends_the_watcher_cleanly(project: Path, tmp_path: Path) -> None:
    proc, _ = _start(project, tmp_path)
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline())["event"] == "pass"
    proc.send_signal(signal.SIGTERM)
    out, _err = proc.communicate(timeout=30)
    assert proc.returncode == 0, _err
    assert json.loads(out.splitlines()[-1])["event"] == "stopped"
    assert held_by(lock_path(project / ".dream")) is None
    assert lock_path(project / ".dream").read_text() == ""  # let go: no holder written


def test_the_lock_in_process(tmp_path: Path) -> None:
    a, b = WatchLock(tmp_path), WatchLock(tmp_path)
    me = a.acquire("dreamlake provider list")
    try:
        b.acquire("dreamlake provider list")
    except WatcherRunning as exc:
        assert exc.holder == me and exc.next_action is not None
    else:
        raise AssertionError("two holders of one root")
    finally:
        a.release()
    assert b.acquire("x").pid == os.getpid()
    b.release()


def test_flags_that_cannot_work_are_refused(project: Path, tmp_path: Path) -> None:
    both = _once(project, tmp_path, "-n", "lab", "--json")
    assert both.returncode == 1 and "not both" in json.loads(both.stdout)["error"]
    none = subprocess.run(
        [DREAMLAKE, "provider", "watch", "--once", "--json", "--dream-dir", str(project)],
        capture_output=True, text=True, timeout=60, env=_env(tmp_path),
    )  # fmt: skip
    doc = json.loads(none.stdout)
    assert none.returncode == 1 and doc["nextAction"]["command"].endswith("watch --help")
