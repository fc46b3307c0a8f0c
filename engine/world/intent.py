"""What verb the engine started: a small record beside the provider, ``intent.json``.

Not a stored phase: the artifact of an act, like a saved plan. A verb that changes
the world (``apply --yes``, ``destroy --yes``, the steps of ``suspend``, ``resume``
and ``reconcile``, ``connect``) writes it atomically before it touches anything
and removes it when it returns. A record left behind by a process that is gone is
an *interrupted* verb: the deriver reports it as that verb (``applying``, the lock
``stale``) and its next action re-runs that verb, gated as it was. A record whose
process still runs is that verb in flight (``held``).

Two finished acts leave a record on purpose, because the world alone cannot say
what they did:

* ``connect`` (or a ``resume``) that started a daemon which has not claimed yet
  (``outcome: connecting``): ``status`` says ``connecting`` while the supervisor
  runs the daemon, within :data:`START_WINDOW` of that answer;
* ``destroy`` of an adopted (``ssh``) provider (``outcome: destroyed``), and a
  ``suspend``/``resume`` that found the kept state gone (``outcome: gone``): the
  workers the daemon registered before still count as ``gone`` in the control
  plane, but nothing is kept any more, so the provider reads ``scaffolded`` (or
  ``unclaimed``), never ``suspended``.

The next ``connect`` replaces the record. Reading is bounded and never raises: a
record that cannot be read is no record.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from ..settings.records import record

INTENT_FILE = "intent.json"
FORMAT = 1
START_WINDOW = 120.0
"""Seconds after a daemon's start during which no claim yet means it is starting."""

ACTING_VERBS = ("apply", "destroy", "suspend", "resume", "reconcile")
"""Verbs whose interruption leaves the provider between two states: re-run them."""

_ACTIVE: dict[str, Recorder] = {}
"""The records this process holds now, by provider folder (see :func:`recording`)."""


@record()
class Intent:
    """The record of a verb the engine started (``intent.json``)."""

    verb: str
    pid: int
    host: str
    started: float  # epoch seconds
    started_at: str  # RFC 3339, for people
    yes: bool = False
    proc_start: str | None = None  # the process's start time (guards against pid reuse)
    outcome: str | None = None  # set only on the finished acts that keep a record
    step: str | None = None  # the lifecycle step it performs (gating decides on it)
    alive: bool = False  # whether the recorded process still runs (read at observe time)
    own: bool = False  # written by a verb of this very process that is still running
    path: str = ""

    @property
    def finished(self) -> bool:
        return self.outcome is not None

    @property
    def interrupted(self) -> bool:
        """Started, never finished, and its process is gone."""
        return not self.finished and not self.alive

    @property
    def in_flight(self) -> bool:
        return not self.finished and self.alive


def _hostname() -> str:
    """This machine's name (``os.uname``: ``socket`` costs status an import)."""
    return os.uname().nodename


def intent_path(provider_dir: Path) -> Path:
    return provider_dir / INTENT_FILE


def _proc_start(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks since boot)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    tail = raw.rsplit(b")", 1)[-1].split()
    return tail[19].decode() if len(tail) > 19 else None


def process_alive(pid: int, host: str, proc_start: str | None) -> bool:
    """Whether the process that wrote a record still runs. A record from another
    machine cannot be asked: it counts as alive (never taken over from here)."""
    if host != _hostname():
        return True
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = _proc_start(pid)
    if proc_start and now and now != proc_start:
        return False  # the pid was reused by another process
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    tail = raw.rsplit(b")", 1)[-1].split()
    return bool(tail) and tail[0] == b"Z"


def _alive(provider_dir: Path, pid: int, host: str, proc_start: str | None) -> bool:
    """This process's own record is alive only while its verb runs (a verb that
    returned, leaving its record on purpose, is not in flight)."""
    if pid == os.getpid() and host == _hostname():
        return str(provider_dir) in _ACTIVE
    return process_alive(pid, host, proc_start)


def read_intent(provider_dir: Path) -> Intent | None:
    """The record beside the provider, None when there is none (or it cannot be read)."""
    path = intent_path(provider_dir)
    try:
        from ..settings.readers import read_json

        data = read_json(path, limit=64 * 1024)
    except Exception:
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    try:
        verb = str(data["verb"])
        pid = int(data.get("pid") or 0)
        host = str(data.get("host") or "")
        started = float(data.get("started") or 0.0)
    except (KeyError, TypeError, ValueError):
        return None
    proc_start = data.get("procStart")
    outcome = data.get("outcome")
    step = data.get("step")
    return Intent(
        verb=verb,
        pid=pid,
        host=host,
        started=started,
        started_at=str(data.get("startedAt") or ""),
        yes=data.get("yes") is True,
        proc_start=str(proc_start) if proc_start else None,
        outcome=str(outcome) if outcome else None,
        step=str(step) if step else None,
        alive=False if outcome else _alive(provider_dir, pid, host, proc_start),
        own=pid == os.getpid() and host == _hostname() and str(provider_dir) in _ACTIVE,
        path=str(path),
    )


def _now_iso(t: float) -> str:
    """``t`` as ``2026-11-29T16:20:21Z`` (to the second, UTC), without importing
    ``datetime`` on apply's path."""
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def write_intent(
    provider_dir: Path,
    verb: str,
    *,
    yes: bool = False,
    outcome: str | None = None,
    started: float | None = None,
    step: str | None = None,
    pid: int | None = None,
) -> Path:
    """Write the record atomically (it replaces any earlier one)."""
    import time

    from ..settings.fsutil import atomic_write

    t = time.time() if started is None else started
    pid = os.getpid() if pid is None else pid
    data = {
        "format": FORMAT,
        "verb": verb,
        "pid": pid,
        "procStart": _proc_start(pid),
        "host": _hostname(),
        "started": t,
        "startedAt": _now_iso(t),
        "yes": yes,
        **({"step": step} if step else {}),
        **({"outcome": outcome} if outcome else {}),
    }
    path = intent_path(provider_dir)
    atomic_write(path, json.dumps(data, indent=2) + "\n")
    return path


def clear_intent(provider_dir: Path) -> None:
    with contextlib.suppress(OSError):
        intent_path(provider_dir).unlink()


class Recorder:
    """The record of one verb in progress; :meth:`finish` keeps a finished act's record."""

    def __init__(self, provider_dir: Path, verb: str, yes: bool, step: str | None) -> None:
        self.dir, self.verb, self.yes, self.step = provider_dir, verb, yes, step
        self.outcome: str | None = None
        self.at: float | None = None
        self.kept = False
        self.ahead = False  # written before the verb ran (hold_ahead), not yet taken over

    def finish(self, outcome: str, at: float | None = None) -> None:
        """Leave a record saying what the act did (see the module docstring)."""
        import time

        self.outcome, self.at = outcome, time.time() if at is None else at

    def keep(self) -> None:
        """The act was interrupted under it (its tool was killed): the record stays,
        so the next run knows what to finish."""
        self.kept = True

    def close(self) -> None:
        if self.kept:
            return
        if self.outcome:
            write_intent(
                self.dir,
                self.verb,
                yes=self.yes,
                outcome=self.outcome,
                started=self.at,
                step=self.step,
            )
        else:
            clear_intent(self.dir)


@contextlib.contextmanager
def recording(
    provider_dir: Path, verb: str, *, yes: bool = False, step: str | None = None
) -> Iterator[Recorder]:
    """Hold a record of ``verb`` while the block runs. It is removed when the block
    returns or raises an ordinary error (the verb finished, with its answer); it
    stays when the process is interrupted (a signal, Ctrl-C): that is the point.
    A verb run by another verb of this process (reconcile's apply) shares the outer
    record: the outer verb is the one to re-run, and what the inner one finds (an
    outcome, an interruption) is kept on it."""
    key = str(provider_dir)
    outer = _ACTIVE.get(key)
    if outer is not None and not outer.ahead:
        yield outer  # what the inner verb finds (an outcome, an interruption) is the outer's
        return
    if outer is None:
        write_intent(provider_dir, verb, yes=yes, step=step)
        rec = Recorder(provider_dir, verb, yes, step)
        _ACTIVE[key] = rec
    else:  # written ahead, as above, by the run this block takes over: its own from now
        rec, rec.ahead = outer, False
    try:
        yield rec
    except Exception:
        _ACTIVE.pop(key, None)
        rec.close()
        raise
    except BaseException:
        _ACTIVE.pop(key, None)
        raise
    _ACTIVE.pop(key, None)
    rec.close()


def hold_ahead(provider_dir: Path, verb: str, *, yes: bool, step: str | None) -> Recorder:
    """Hold a record this process wrote before its verb began, exactly as
    :func:`recording` writes one (the apply the console script starts ahead,
    ``backends.terraform.early_apply``): it reads as this process's own verb, and
    the verb's ``recording`` block takes it over as if it had written it."""
    rec = Recorder(provider_dir, verb, yes, step)
    rec.ahead = True
    _ACTIVE[str(provider_dir)] = rec
    return rec


def release_ahead(provider_dir: Path, *, keep: bool) -> None:
    """Let go of a record held by :func:`hold_ahead` that no ``recording`` block took
    over: removed as a finished verb's, or ``keep`` (interrupted) left in place."""
    rec = _ACTIVE.get(str(provider_dir))
    if rec is None or not rec.ahead:
        return
    del _ACTIVE[str(provider_dir)]
    if keep:
        rec.keep()
    rec.close()


__all__ = [
    "ACTING_VERBS",
    "INTENT_FILE",
    "START_WINDOW",
    "Intent",
    "Recorder",
    "clear_intent",
    "hold_ahead",
    "intent_path",
    "process_alive",
    "read_intent",
    "recording",
    "release_ahead",
    "write_intent",
]
