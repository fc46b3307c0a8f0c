"""Where each provider stands and what the watcher would do about it.

Statuses are derived as ``status`` derives them (:func:`..verbs.status.status_of`
over the observations ``list`` makes: the control plane asked for every claim in
one request). The step is the lifecycle planner's, with the provider's effective
gating set, as ``reconcile`` plans it; the host is probed only when a step is
needed at all, so a pass over providers that are where they should be starts no
process beyond what ``status`` would.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..contract.result import ProviderLifecycleResult
from ..lifecycle.actual import ShellFactory
from ..world.derive import Observation
from .decide import Decision, decide, needs_step


@dataclass(frozen=True)
class Seen:
    """One provider in one pass: its observation (None when its files are broken),
    its status, and the decision."""

    name: str
    obs: Observation | None
    result: ProviderLifecycleResult
    decision: Decision

    @property
    def target(self) -> str:
        return self.obs.target if self.obs is not None else "active"


def planned(obs: Observation, factory: ShellFactory | None) -> tuple[str, bool, str]:
    """``(step, gated, why)``: the planner's step for ``obs``, as ``reconcile`` plans it
    (the daemon on its host probed for daemon-level vendors with something there)."""
    from ..lifecycle.actual import actual_status, level, observe_host, read_applied_stopped
    from ..lifecycle.planner import plan_step

    there = obs.adopt or (obs.infra is not None and obs.infra.present)
    host = observe_host(obs, factory) if there and level(obs) == "daemon" else None
    actual = actual_status(obs, host, read_applied_stopped(obs))
    step = plan_step(actual, obs.target, obs.stateful, obs.gating)
    return step.action, step.gated, f"actual {actual}, target {obs.target}: {step.why}"


def restartable(obs: Observation) -> bool:
    """``connect`` started a daemon for this provider before (it recorded the host)."""
    from ..daemon.host import read

    return read(obs.dir) is not None


def finishable(obs: Observation, res: ProviderLifecycleResult) -> bool:
    """A ``reconcile`` whose process is gone (a watcher killed mid-step, or a person's
    run) and whose re-run needs no person's yes: the next watcher finishes it."""
    nxt = res.next_action
    return (
        res.status == "applying"
        and res.lock is not None
        and res.lock.state == "stale"
        and obs.intent is not None
        and obs.intent.verb == "reconcile"
        and nxt is not None
        and getattr(nxt, "approval", None) is None
    )


def look(item: Observation | ProviderLifecycleResult, factory: ShellFactory | None) -> Seen:
    """One provider's status and the watcher's decision for it."""
    if isinstance(item, ProviderLifecycleResult):
        return Seen(item.provider, None, item, decide(item.status, "active", None, False,
                                                      restart=False))  # fmt: skip
    from ..contract.errors import DreamlakeError
    from ..verbs.status import status_of

    res = status_of(item)
    if not needs_step(res.status, item.target):
        d = decide(
            res.status, item.target, None, False, restart=False, finish=finishable(item, res)
        )
        return Seen(item.name, item, res, d)
    try:
        step, gated, why = planned(item, factory)
    except DreamlakeError as exc:
        return Seen(item.name, item, res, Decision("report", "-", False, exc.message))
    d = decide(res.status, item.target, step, gated, restart=restartable(item), why=why)
    return Seen(item.name, item, res, d)


__all__ = ["Seen", "finishable", "look", "planned", "restartable"]
