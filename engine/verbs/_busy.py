"""One answer while a verb is in flight or was interrupted (``applying``).

Whichever verb asks, the answer is the deriver's: ``applying``, the lock (``held``
while a live process runs it, ``stale`` once that process is gone), and the next
action re-running the verb that was started, gated as it was. A verb acts over it
only where acting *is* that recovery:

* nothing acts while a live process holds it;
* ``apply`` and ``plan`` act over an interrupted apply (terraform takes the stale
  lock over: the result says so);
* ``suspend``, ``resume`` and ``reconcile`` re-run themselves;
* ``destroy`` acts over any interrupted verb: taking everything down is always a
  recovery a person may choose.
"""

from __future__ import annotations

from ..backends.base import InfraState
from ..contract.result import LockInfo, ProviderLifecycleResult
from ..settings.records import replace
from ..world.derive import Observation, applying, article, interrupted_verb
from ..world.observe import to_result


def held(obs: Observation) -> bool:
    lock = obs.infra.lock if obs.infra else None
    intent = obs.intent
    return (lock is not None and lock.state == "held") or (intent is not None and intent.in_flight)


def may_act(obs: Observation, verb: str) -> bool:
    """Whether ``verb`` may act on the world as it is (see the module docstring)."""
    iv = interrupted_verb(obs)
    if iv is None:
        return True
    if held(obs):
        return False
    if verb == "destroy":
        return True
    if verb in ("apply", "plan"):
        return iv == "apply"
    return iv == verb


def with_lock(obs: Observation, lock: LockInfo) -> Observation:
    """``obs`` with a lock the backend ran into (a run that started after observe)."""
    return replace(obs, infra=replace(obs.infra or InfraState(), lock=lock))


def busy(obs: Observation, verb: str, *, files: list[str] | None = None) -> ProviderLifecycleResult:
    """The ``applying`` answer, with a line saying that ``verb`` did nothing and why."""
    dv = applying(obs)
    res = to_result(obs, dv, files=files)
    iv = interrupted_verb(obs) or "apply"
    assert dv.next_action is not None
    again = dv.next_action.command
    if held(obs):
        why = f"{article(iv)} is in flight"
        tail = f"re-run it when that run has finished: {again}"
    else:
        why = f"{article(iv)} was interrupted"
        tail = f"re-run it to finish: {again}"
    if verb == iv and held(obs):
        return res.with_notes(f"nothing was done: {why}; {tail}")
    if verb != iv:
        return res.with_notes(f"{verb} did nothing: {why}; {tail}")
    return res


def takeover_note(before: InfraState | None, after: InfraState | None) -> str | None:
    """Say so when a stale lock was taken over (terraform takes a lock nobody holds,
    and removes its record when it is done): a lock never vanishes unmentioned."""
    lock = before.lock if before else None
    if lock is None or lock.state != "stale" or lock.path is None:
        return None
    if after is not None and after.lock is not None and after.lock.path == lock.path:
        return None
    since = f", taken {lock.since}" if lock.since else ""
    return (
        f"the lock an interrupted run left on the state ({lock.path}{since}) was taken over "
        "and released: nothing holds the state now"
    )


__all__ = ["busy", "held", "may_act", "takeover_note", "with_lock"]
