"""benchmarks/cpugroup.py (fleet_daemons.py's ``--load-weight``): the group is made
with the weight asked for, a process that joins it is in it with all its threads,
and it is removed once its processes have ended; where no cpu controller can be
written it says why and joining does nothing."""

from __future__ import annotations

import multiprocessing as mp
import sys
import threading
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))
import cpugroup  # noqa: E402


def _joined(folder: str, ready: object, leave: object) -> None:
    threading.Thread(target=leave.wait, daemon=True).start()  # type: ignore[attr-defined]
    cpugroup.join(folder)
    ready.set()  # type: ignore[attr-defined]
    leave.wait(30)  # type: ignore[attr-defined]


def test_a_joined_process_is_in_the_group_until_it_ends() -> None:
    folder, said = cpugroup.make(0.5, name=f"dreamlake-test-cpugroup-{mp.current_process().pid}")
    if folder is None:
        assert "cgroup" in said or "controller" in said
        pytest.skip(f"needs a writable cpu cgroup controller (root): {said}")
    try:
        knob = "cpu.shares" if "cpu.shares" in said else "cpu.weight"
        assert Path(folder, knob).read_text().strip() == said.split("=")[1].split()[0]
        assert int(said.split("=")[1].split()[0]) in (512, 50)  # half of one process
        ctx = mp.get_context("spawn")
        ready, leave = ctx.Event(), ctx.Event()
        child = ctx.Process(target=_joined, args=(folder, ready, leave))
        child.start()
        assert ready.wait(30)
        members = Path(folder, "cgroup.procs").read_text().split()
        assert str(child.pid) in members
        tasks = Path(folder, "tasks" if Path(folder, "tasks").exists() else "cgroup.threads")
        assert len(tasks.read_text().split()) >= 2  # its threads moved with it
        cpugroup.remove(folder)  # refused while a process is in it
        assert Path(folder).is_dir()
        leave.set()
        child.join(30)
    finally:
        cpugroup.remove(folder)
    assert not Path(folder).exists()


def test_joining_no_group_does_nothing() -> None:
    cpugroup.join(None)
    cpugroup.remove(None)
