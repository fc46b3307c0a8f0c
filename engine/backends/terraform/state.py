"""``observe_state``: what terraform's state, locks and saved plan say, read from
disk without running terraform (it runs on every ``status``).

Only a configured remote backend (a ``backend``/``cloud`` block, or
``.terraform/terraform.tfstate`` naming a non-local backend) falls back to
``terraform state pull``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ...backends.base import InfraState
from ...contract.errors import DreamlakeError
from ...contract.result import EditThenContinue, LockInfo
from .location import state_location
from .lockinfo import lock_info_path, probe_fcntl, read_lock_info, to_lock
from .planfile import Freshness, freshness
from .planname import DRIFT_FILE
from .statefile import (
    ERRORED_STATE,
    StateFile,
    cloud_providers,
    parse_state,
    read_state,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

    from ...backends.driftrecord import DriftRecord

STALE_AFTER_HOURS = 24


def remote_backend(tf_dir: Path) -> str | None:
    """The configured non-local backend type, or None for local state."""
    return state_location(tf_dir).remote


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 172800:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} days"


def stale_hint(state: StateFile, *, now: float | None = None) -> str | None:
    """A short, honest note when the state may not match the world."""
    if not state.present or not cloud_providers(state):
        return None
    age = ""
    if state.mtime is not None:
        secs = (now or time.time()) - state.mtime
        if secs > STALE_AFTER_HOURS * 3600:
            age = f", last written {_age(secs)} ago"
    return (
        f"infrastructure state is terraform's record{age}, not a live check of the account; "
        "`plan` refreshes it"
    )


def _pull_remote(tf_dir: Path, provider_dir: Path) -> tuple[StateFile | None, str | None]:
    if not (tf_dir / ".terraform").is_dir():
        return None, "remote state not read: run plan once to initialise the backend"
    from .runner import run
    from .tfexec import state_pull_args

    try:
        done = run(state_pull_args(), cwd=tf_dir, provider_dir=provider_dir, timeout=60)
    except DreamlakeError as exc:
        return None, f"remote state not read: {exc.message}"
    if done.returncode != 0:
        return None, "remote state not read: `terraform state pull` failed"
    if not done.stdout.strip():
        return StateFile(exists=False), None
    try:
        return parse_state(json.loads(done.stdout)), None
    except ValueError:
        return None, "remote state not read: `terraform state pull` printed no JSON"


def observe_state(provider_dir: Path) -> InfraState:
    tf = provider_dir / "terraform"
    if not tf.is_dir():
        return InfraState()
    notes: list[str] = []
    where = state_location(tf)
    state_path = where.path
    if where.remote:
        pulled, note = _pull_remote(tf, provider_dir)
        if note:
            notes.append(note)
        state = pulled or StateFile(exists=False)
    else:
        state = read_state(state_path)
        if state.exists and not state.readable:
            raise unreadable_state(state_path, state.error or f"{state_path} cannot be read")

    lock = None if where.remote else _lock(tf, state_path, state, notes)
    partial = lock is not None and lock.state == "stale" and _is_partial(tf, state)

    fresh = freshness(tf)
    plan = fresh.record.plan if fresh.fresh and fresh.record else None
    failed = None if lock is not None or where.remote else _failed_apply(tf, state, fresh)
    return InfraState(
        present=state.present,
        resources=state.resources,
        outputs=dict(state.outputs),
        lock=lock,
        partial=partial,
        plan_fresh=fresh.fresh,
        plan=plan,
        plan_changes=bool(fresh.record.changes) if fresh.fresh and fresh.record else True,
        stale_hint=stale_hint(state),
        notes=tuple(notes),
        failed_apply=failed,
        drift=_drift(tf / DRIFT_FILE, state),
    )


def _drift(path: Path, state: StateFile) -> DriftRecord | None:
    """The last drift check's record when it was taken against ``state``; its reader
    is imported only where a drift check left one (one stat otherwise)."""
    if not path.exists():
        return None
    from ...backends.driftrecord import live_drift

    return live_drift(path, drift_key(state))


def current_state(provider_dir: Path) -> StateFile:
    """The state as a drift check takes it: the local file, or the pulled remote one."""
    tf = provider_dir / "terraform"
    where = state_location(tf)
    if where.remote:
        pulled, _ = _pull_remote(tf, provider_dir)
        return pulled or StateFile(exists=False)
    return read_state(where.path)


def drift_key(state: StateFile) -> dict[str, Any]:
    """The state a drift record is taken against: an apply, a refresh or a destroy
    writes a new serial (and a new lineage after the state was replaced)."""
    return {"serial": state.serial, "lineage": state.lineage}


def _failed_apply(tf: Path, state: StateFile, fresh: Freshness) -> tuple[str, ...] | None:
    """The resources an apply left when it failed part-way, else None.

    The world's evidence: the saved plan is still there (an apply that succeeds
    removes it), the state moved since that plan was made (so the apply ran), and
    some resource the plan creates is not in the state, or only tainted (so it did
    not finish)."""
    record = fresh.record
    if fresh.fresh or record is None or not record.creates:
        return None
    if record.state.get("serial") == state.serial and record.state.get("lineage") == state.lineage:
        return None
    have = set(state.addresses) - set(state.tainted)  # tainted: created, then failed
    if all(a in have for a in record.creates):
        return None
    return tuple(a for a in record.creates if a in have)


def unreadable_state(path: Path, error: str) -> DreamlakeError:
    """A state nobody can read: an error naming it, whose recovery is to repair the file
    and ``plan`` — never ``apply``, which would act on a record of nothing."""
    backup = path.with_name(path.name + ".backup")
    hint = (
        f"; terraform kept the previous snapshot in {backup.name}: restore it (copy it over "
        f"{path.name}) if this file was damaged"
        if backup.is_file()
        else "; restore it from a copy if you have one, or move it aside only when no "
        "infrastructure was ever applied from this folder"
    )
    return DreamlakeError(
        f"the terraform state cannot be read: {error}{hint}",
        kind="state_unreadable",
        next_action=EditThenContinue(file=str(path), command=""),
    )


def _is_partial(tf: Path, state: StateFile) -> bool:
    return state.empty or not state.readable or (tf / ERRORED_STATE).is_file()


def _lock(tf: Path, state_path: Path, state: StateFile, notes: list[str]) -> LockInfo | None:
    """A lock meaning "applying": held by a live run, or left by an interrupted one.

    A running or killed ``plan`` only reads, so its lock is a note, not a lock.
    """
    info_path = lock_info_path(state_path)
    info: dict[str, Any] | None = read_lock_info(info_path)
    probe = probe_fcntl(state_path)
    early = sys.modules.get(f"{__package__}.early")  # loaded only where a plan started ahead
    if early is not None and early.pending(tf):
        if probe.held and early.owns(probe.pid):
            return None  # this run's own plan, started ahead of it: no other run
        if info == {} and not probe.held:
            info = read_lock_info(info_path)  # read as that plan wrote it, and it has ended
    errored = tf / ERRORED_STATE
    if errored.is_file():
        return LockInfo(
            state="stale",
            path=str(errored),
            detail=(
                "terraform could not save the state after an apply and wrote errored.tfstate; "
                "push it back with `terraform state push errored.tfstate` before anything else"
            ),
        )
    if info == {} and not probe.held:
        # Present, unreadable, and nobody holds the lock: who left it, doing what, is
        # unknown (a plan's leftover is no apply). Say so; never guess "re-run apply".
        raise DreamlakeError(
            f"{info_path} cannot be read as a terraform lock record and no process holds the "
            "lock now; if no terraform run is in progress in this folder, remove the file",
            kind="lock_unreadable",
            next_action=EditThenContinue(file=str(info_path), command=""),
        )
    if info is None and not probe.held:
        # A 0-byte state alone is "no state" to terraform (a plan after a killed
        # first apply removes the lock.info but keeps the empty file).
        if not state.readable and state.exists:
            return LockInfo(state="stale", path=str(state_path), detail=state.error)
        return None
    lock = to_lock(info, probe, info_path if info is not None else state_path)
    if lock.operation == "plan":
        if probe.held:
            notes.append("a terraform plan is running in this directory")
        return None
    return lock
