"""Lock metadata from the fixture files, and the fcntl probe against a real lock
held by another process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.lockinfo import (
    LOCK_INFO,
    LockProbe,
    lock_from_diagnostic,
    lock_info_path,
    probe_fcntl,
    read_lock_info,
    to_lock,
)
from dreamlake.engine.backends.terraform.uijson import parse_stream, summarize
from shared_fixtures import cases, own_manifest

_MADE = own_manifest()


@pytest.mark.parametrize(
    ("root", "name", "who", "version"),
    cases(
        own=[
            (name, facts["Who"], facts["Version"])
            for name, facts in (
                ("lock/.terraform.tfstate.lock.info", _MADE["lockDuringApply"]),
                (
                    "generated-locally/crash-first-apply/.terraform.tfstate.lock.info",
                    _MADE["crash-first-apply"]["lock"],
                ),
                (
                    "generated-locally/crash-mid-apply/.terraform.tfstate.lock.info",
                    _MADE["crash-mid-apply"]["lock"],
                ),
                ("generated-locally/lock-info-during-apply.json", _MADE["lockDuringApply"]),
            )
        ],
        upstream=[
            ("lock/.terraform.tfstate.lock.info", "ianaya89@ianaya89-mbpro14.local", "1.5.5"),
            (
                "generated-locally/crash-first-apply/.terraform.tfstate.lock.info",
                "root@vm",
                "1.11.4",
            ),
            ("generated-locally/lock-info-during-apply.json", "root@vm", "1.11.4"),
        ],
    ),
)
def test_lock_info_fixtures(root: Path, name: str, who: str, version: str) -> None:
    info = read_lock_info(root / name)
    assert info is not None and info["Who"] == who and info["Version"] == version
    lock = to_lock(info, LockProbe(False), root / name)
    assert lock.state == "stale" and lock.operation == "apply" and lock.who == who
    assert lock.since == info["Created"]


def test_lock_info_path() -> None:
    assert lock_info_path(Path("/x/terraform.tfstate")) == Path("/x") / LOCK_INFO


def test_absent_and_garbage(tmp_path: Path) -> None:
    assert read_lock_info(tmp_path / "none") is None
    (tmp_path / "g").write_text("nope")
    assert read_lock_info(tmp_path / "g") == {}


def test_lock_from_the_lock_held_diagnostic(fixtures: Path) -> None:
    s = summarize(
        parse_stream(
            (fixtures / "generated-locally/plan.lock-held-by-other-process.jsonl").read_text()
        )
    )
    lock = lock_from_diagnostic(s.errors[0]["detail"], Path("/d/.terraform.tfstate.lock.info"))
    held = _MADE["lockDuringApply"]
    assert lock.state == "held" and lock.who == held["Who"] and lock.operation == "apply"
    assert lock.since == held["Created"]


_HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(60)
"""


def test_probe_sees_a_lock_held_by_another_process_and_not_after_it_dies(tmp_path: Path) -> None:
    state = tmp_path / "terraform.tfstate"
    state.write_text("")
    assert probe_fcntl(state) == LockProbe(False)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(state)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        probe = probe_fcntl(state)
        assert probe.held and probe.pid == holder.pid
        assert probe_fcntl(state).held  # probing twice takes nothing
    finally:
        holder.kill()
        holder.wait()
    assert probe_fcntl(state) == LockProbe(False)
    assert probe_fcntl(tmp_path / "missing") == LockProbe(False)
