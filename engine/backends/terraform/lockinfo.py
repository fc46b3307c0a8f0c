"""Terraform's local state lock: ``.terraform.tfstate.lock.info`` (metadata) plus a
POSIX ``fcntl`` write lock on ``terraform.tfstate`` itself (the real lock, dropped
by the kernel when the holder dies).

A lock.info file with no fcntl lock behind it was left by a killed run
("stale"); an fcntl lock held by another process means a run is in flight
("held"). The probe asks with ``F_GETLK``, which takes nothing, so it never
races a terraform starting at the same moment. (fcntl locks belong to a process:
this process never holds one on a state file, so the answer is about others.)
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

from ...contract.result import LockInfo
from ...settings.readers import loads_json, read_bytes
from ...settings.records import record
from .flockbytes import type_and_pid, whole_file

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any, Literal

LOCK_INFO = ".terraform.tfstate.lock.info"


@record()
class LockProbe:
    """Whether the state lock is held, and by which process when known."""

    held: bool
    pid: int | None = None


def lock_info_path(state_path: Path) -> Path:
    """``<dir>/.<state file name without a leading dot>.lock.info``."""
    return state_path.parent / f".{state_path.name.lstrip('.')}.lock.info"


def read_lock_info(path: Path) -> dict[str, Any] | None:
    """The lock.info JSON (Go field names ID, Operation, Info, Who, Version,
    Created, Path), ``{}`` when present but unreadable, None when absent."""
    try:
        raw = read_bytes(path, limit=1024 * 1024)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    try:
        data = loads_json(raw, path=path)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def probe_fcntl(state_path: Path) -> LockProbe:
    """Is a write lock on ``state_path`` held by another process right now?"""
    try:
        fd = os.open(state_path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return LockProbe(False)
    try:
        try:
            res = fcntl.fcntl(fd, fcntl.F_GETLK, whole_file(fcntl.F_WRLCK))
        except OSError:
            return _probe_setlk(state_path)
        l_type, pid = type_and_pid(res)
        if l_type == fcntl.F_UNLCK:
            return LockProbe(False)
        return LockProbe(True, pid or None)
    finally:
        os.close(fd)


def _probe_setlk(state_path: Path) -> LockProbe:
    """Fallback: take the lock without blocking and release it at once."""
    try:
        fd = os.open(state_path, os.O_RDWR | os.O_NONBLOCK)
    except OSError:
        return LockProbe(False)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return LockProbe(True)
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return LockProbe(False)
    finally:
        os.close(fd)


_OPERATIONS = {
    "OperationTypeApply": "apply",
    "OperationTypePlan": "plan",
    "OperationTypeRefresh": "refresh",
    "OperationTypeInvalid": "unknown",
}


def operation_name(raw: str | None) -> str | None:
    if not raw:
        return None
    return _OPERATIONS.get(raw, raw)


def to_lock(info: dict[str, Any] | None, probe: LockProbe, path: Path) -> LockInfo:
    info = info or {}
    state: Literal["held", "stale"] = "held" if probe.held else "stale"
    if probe.held:
        detail = "a terraform run holds the state lock" + (
            f" (pid {probe.pid})" if probe.pid else ""
        )
    else:
        detail = "left by a terraform run that was interrupted; nothing holds the lock now"
    return LockInfo(
        state=state,
        path=str(path),
        who=info.get("Who") or None,
        since=info.get("Created") or None,
        operation=operation_name(info.get("Operation")),
        detail=detail,
    )


def lock_from_diagnostic(detail: str, path: Path) -> LockInfo:
    """A held lock from the ``Error acquiring the state lock`` diagnostic's detail."""
    fields: dict[str, str] = {}
    for line in detail.splitlines():
        key, sep, value = line.strip().partition(":")
        if sep and key in ("ID", "Path", "Operation", "Who", "Version", "Created"):
            fields[key] = value.strip()
    return LockInfo(
        state="held",
        path=str(path),
        who=fields.get("Who") or None,
        since=_rfc3339(fields.get("Created")),
        operation=operation_name(fields.get("Operation")),
        detail="another terraform run holds the state lock",
    )


_GO_TIME = r"^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?) \+0000 UTC$"  # compiled on first use


def _rfc3339(value: str | None) -> str | None:
    """Go's ``2026-11-29 16:20:21.08 +0000 UTC`` as ``2026-11-29T16:20:21.08Z``."""
    if not value:
        return None
    m = re.match(_GO_TIME, value.strip())
    return f"{m.group(1)}T{m.group(2)}Z" if m else value
