"""One watcher per root: an ``fcntl`` lock on ``.dream/watch.lock``.

The holder writes who it is into the locked file (``{"pid", "host", "since"}``); a
second watcher on the same root reads that and refuses (:class:`WatcherRunning`).
The kernel drops the lock with the process, however it ends (``kill -9`` included),
so nothing a dead watcher leaves behind stops the next one: the file stays, its
lock does not, and the next holder writes itself over the stale doc.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract.errors import DreamlakeError

LOCK_FILE = "watch.lock"


def lock_path(dream: Path) -> Path:
    """The lock file of the root whose ``.dream/`` is ``dream``."""
    return dream / LOCK_FILE


@dataclass(frozen=True)
class Holder:
    """Who holds a root's watch lock, as it wrote itself into the file."""

    pid: int | None
    host: str | None
    since: str | None

    def describe(self) -> str:
        if self.pid is None:
            return "another watcher (it has not written who it is yet)"
        return f"pid {self.pid} on {self.host or '?'} since {self.since or '?'}"

    def to_wire(self) -> dict[str, Any]:
        return {"pid": self.pid, "host": self.host, "since": self.since}


class WatcherRunning(DreamlakeError):
    """Another watcher holds this root."""

    kind = "watcher_running"

    def __init__(self, holder: Holder, path: Path, command: str) -> None:
        from ..contract.result import Run

        super().__init__(
            f"a watcher already runs on this root: {holder.describe()} (lock {path}); "
            "one watcher per root — stop that one first, or leave it watching",
            next_action=Run(command=command),
        )
        self.holder = holder
        self.path = path


def read_holder(path: Path) -> Holder:
    """The holder doc in ``path`` (fields None when it cannot be read)."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    pid = data.get("pid")
    return Holder(
        pid if isinstance(pid, int) else None,
        data.get("host") if isinstance(data.get("host"), str) else None,
        data.get("since") if isinstance(data.get("since"), str) else None,
    )


def held_by(path: Path) -> Holder | None:
    """Who holds the lock at ``path`` now; None when nobody does (the doc a watcher
    killed with ``kill -9`` left is not a holder)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return read_holder(path)
    finally:
        os.close(fd)
    return None


def now_iso(t: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if t is None else t))


class WatchLock:
    """The lock, held from :meth:`acquire` until :meth:`release` (or the process ends)."""

    def __init__(self, dream: Path) -> None:
        self.path = lock_path(dream)
        self._fd: int | None = None
        self.holder: Holder | None = None

    def acquire(self, command: str) -> Holder:
        """Take the lock or raise :class:`WatcherRunning` naming who has it.
        ``command``: what the refusal's next action runs (look at that watcher)."""
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise WatcherRunning(read_holder(self.path), self.path, command) from None
        me = Holder(os.getpid(), socket.gethostname(), now_iso())
        data = (json.dumps(me.to_wire()) + "\n").encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        os.fsync(fd)
        self._fd, self.holder = fd, me
        return me

    def release(self) -> None:
        """Let go: the file says nobody holds it, then the lock is dropped."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing drops the flock

    def __enter__(self) -> WatchLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = [
    "LOCK_FILE",
    "Holder",
    "WatchLock",
    "WatcherRunning",
    "held_by",
    "lock_path",
    "now_iso",
    "read_holder",
]
