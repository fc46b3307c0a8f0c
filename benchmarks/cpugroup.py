"""A CPU group for a benchmark's load processes: the daemons of a fleet run on hosts
of their own, but a benchmark runs them on the server's machine.

The kernel shares a CPU among runnable *threads*: 10,000 daemon threads (each
doing its own TLS handshake, in 20 processes) outweigh the server's one event
loop and its edge processes however nice they are, so the server gets a small
share of a core while the fleet waits for it, and the benchmark measures the
load's contention for the machine rather than the server. A CPU cgroup makes the
load processes one entity to the scheduler: ``cpu.shares`` (cgroup v1) or
``cpu.weight`` (v2) set how much of a busy machine the whole group gets against
each process outside it. The server still gets no more CPU than it asks for, and
the load gets every cycle the server leaves.

:func:`make` creates the group where the machine allows it (root, a writable
``cpu`` controller) and says why not otherwise; :func:`join` puts the calling
process (all its threads) in it; :func:`remove` removes it once its processes
have ended.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

V1 = Path("/sys/fs/cgroup/cpu")  # cgroup v1's cpu controller
V2 = Path("/sys/fs/cgroup")  # the unified hierarchy, where it has the cpu controller
V1_DEFAULT = 1024  # cpu.shares of a process outside the group
V2_DEFAULT = 100  # cpu.weight of the same


def make(weight: float, name: str | None = None) -> tuple[str | None, str]:
    """A group whose processes together weigh ``weight`` (a fraction of one
    process outside it); returns its folder (or None) and what was done."""
    name = name or f"dreamlake-bench-load-{os.getpid()}"
    if (V1 / "cgroup.procs").exists():
        folder, knob, value = V1 / name, "cpu.shares", max(2, round(V1_DEFAULT * weight))
    elif "cpu" in _read(V2 / "cgroup.controllers").split():
        folder, knob, value = V2 / name, "cpu.weight", max(1, round(V2_DEFAULT * weight))
    else:
        return None, "no cpu cgroup controller here: the load shares the CPU per thread"
    try:
        folder.mkdir(exist_ok=True)
        (folder / knob).write_text(str(value))
    except OSError as e:
        return None, f"the cpu cgroup could not be made ({e}): the load shares the CPU per thread"
    return str(folder), f"{knob}={value} for the load processes together"


def join(folder: str | None) -> None:
    """Move this process (every thread of it) into ``folder``'s group."""
    if folder:  # a process left out shares the CPU per thread
        with contextlib.suppress(OSError):
            Path(folder, "cgroup.procs").write_text(str(os.getpid()))


def remove(folder: str | None) -> None:
    """Remove the group (the kernel refuses while a process is still in it)."""
    if folder:
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
