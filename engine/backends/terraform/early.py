"""``plan``'s terraform run, started ahead of the rest of the run.

On an unchanged, initialised provider ``plan --json`` starts one terraform process,
``plan -json``, and what it needs is known long before the rest of the run is
ready: the provider's terraform folder, the binary, its arguments and its
environment. The console script's short way starts it as soon as they are known
(:func:`start_plan`) and imports, observes and scans while terraform runs on the
other core; the backend's plan
takes it over (:func:`take`) where its own facts are the same (folder, binary,
environment, what init reads, no progress wanted), and otherwise runs its own.

A plan started ahead is safe to leave unused:

* it is started only where ``plan`` would run just that: the init record matches
  what init reads, the state is a local file with no lock record and no errored
  state beside it, and no verb of the engine recorded in flight or interrupted;
* it writes its plan to a file of its own (``terraform/early-<pid>.tfplan``: a
  plan file, git-ignored, which neither the decision scan, the init record nor the
  plan record reads), moved over ``tfplan`` only when taken: a run that ends
  before planning (blocked decisions, a verb in flight, an adopted host, a binary
  too old, an error) leaves the saved plan it found;
* a plan only reads the state; the lock it holds while it runs belongs to this
  process's own child, which ``observe_state`` does not count (:func:`owns`);
* one not taken is interrupted as a person's Ctrl-C does (terraform stops and
  releases its lock itself), waited for, and its file removed (:func:`settle`),
  before any other terraform run of the backend's plan and when the command ends.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .initmark import InitCheck
from .runner import Completed, Started

EARLY_PREFIX = "early-"  # + the pid of the process that started it + ".tfplan"

if TYPE_CHECKING:
    from ...backends.base import Progress


@dataclass(frozen=True)
class _Ahead:
    """One plan started ahead: the facts it was started with."""

    tf: str
    binary: str
    env: dict[str, str]
    fingerprint: str
    out: Path
    run: Started


_PENDING: dict[str, _Ahead] = {}


def _key(tf: Path) -> str:
    return os.path.realpath(tf)


def start_plan(name: str, dream_dir: str | None) -> bool:
    """Start ``plan -json`` for provider ``name`` where that is safe (the module
    docstring); True when one was started. Never raises: where anything is not as
    expected, nothing is started and the run plans as it always did."""
    try:
        return _start(name, dream_dir)
    except Exception:  # a head start only: the run itself says what is wrong
        return False


def _start(name: str, dream_dir: str | None) -> bool:
    from ...world.intent import read_intent
    from ...world.paths import NAME_RE, find_root
    from .runner import run_env, start, terraform_binary
    from .statefile import ERRORED_STATE
    from .tfexec.plan import plan_args

    if not NAME_RE.fullmatch(name) or os.environ.get("TF_DATA_DIR"):
        return False
    pdir = find_root(dream_dir).provider_dir(name)
    tf = pdir / "terraform"
    if _key(tf) in _PENDING or not (pdir / "provider.json").is_file():
        return False
    intent = read_intent(pdir)
    if (intent is not None and not intent.finished) or not tf.is_dir():
        return False  # a verb in flight, or one interrupted: the plan verb decides
    from .location import state_location
    from .lockinfo import lock_info_path

    where = state_location(tf)
    if where.remote or lock_info_path(where.path).exists() or (tf / ERRORED_STATE).exists():
        return False
    from . import initmark

    binary = terraform_binary()
    env = run_env(pdir)
    mark = initmark.check(tf, binary, env)
    if mark.needed or mark.version is None:
        return False
    name = f"{EARLY_PREFIX}{os.getpid()}.tfplan"
    out = tf / name
    out.unlink(missing_ok=True)
    run = start(plan_args(out=name), cwd=tf, binary=binary, env=env)
    _PENDING[_key(tf)] = _Ahead(_key(tf), binary, dict(env), mark.fingerprint, out, run)
    return True


def owns(pid: int | None) -> bool:
    """Whether ``pid`` is a plan this process started ahead and still holds, or a
    process of its own (terraform before 1.2 runs its work in a child of itself, to
    report a crash)."""
    ours = {a.run.pid for a in _PENDING.values()}
    for _ in range(4):
        if pid is None or pid <= 1:
            return False
        if pid in ours:
            return True
        pid = _parent(pid)
    return False


def _parent(pid: int) -> int | None:
    """The parent of ``pid`` from ``/proc`` (None where there is none to read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def pending(tf: Path) -> bool:
    """Whether a plan started ahead in ``tf`` is not taken or settled yet."""
    return _key(tf) in _PENDING


def take(
    tf: Path, binary: str, env: Mapping[str, str], mark: InitCheck, progress: Progress | None
) -> Completed | None:
    """The finished run of the plan started ahead in ``tf`` when it was started with
    these facts, its plan moved over ``tfplan``; else None (one started with other
    facts is settled first, and the caller runs its own)."""
    from ...contract.events import active as events_active

    ahead = _PENDING.get(_key(tf))
    if ahead is None:
        return None
    same = (
        ahead.binary == binary
        and ahead.env == dict(env)
        and ahead.fingerprint == mark.fingerprint
        and not mark.needed
        and progress is None
        and not events_active()
    )
    if not same:
        _settle(ahead)
        return None
    done = ahead.run.finish()  # interrupted here, it stays pending: settle waits for it
    del _PENDING[ahead.tf]
    if done.returncode in (0, 2):
        from .planname import PLAN_FILE

        try:
            os.replace(ahead.out, tf / PLAN_FILE)
            return done
        except OSError:  # no file, or another filesystem: the caller plans again
            ahead.out.unlink(missing_ok=True)
            return None
    ahead.out.unlink(missing_ok=True)
    return done


def _settle(ahead: _Ahead, stop: bool = True) -> None:
    try:
        if stop:
            ahead.run.interrupt()
        else:
            ahead.run.finish()
    finally:
        _PENDING.pop(ahead.tf, None)
        ahead.out.unlink(missing_ok=True)


def settle(*, stop: bool = True) -> None:
    """Stop and remove every plan started ahead and not taken (the command ends).
    ``stop=False``: wait for it without a signal of our own (a Ctrl-C reached it
    already: a second one would make terraform exit at once)."""
    for ahead in list(_PENDING.values()):
        _settle(ahead, stop)


__all__ = ["EARLY_PREFIX", "owns", "pending", "settle", "start_plan", "take"]
