"""What one pass does for one provider: pure, from what ``status`` derived and the
step the lifecycle planner names (``engine/lifecycle/planner.py``, the planner
``reconcile`` uses, with the same effective gating set).

=====================================  ===========================================
the provider                           the watcher
=====================================  ===========================================
a verb in flight (applying,            nothing: it waits for it (a reconcile
connecting)                            interrupted, its process gone, is re-run
                                       when that needs no person's yes)
error, open decisions                  reports it (its next action is a person's)
connected, target active /             nothing: where it should be
suspended, target suspended
unclaimed, target active, connect      ``connect`` (a daemon that died is started
started a daemon there before          again; connect spends and destroys nothing,
                                       so it is never gated)
any other: the planner's step          ``none``/``wait``: nothing; ``recover``:
                                       reported; gated: reported, never performed;
                                       ungated: performed by ``reconcile``
=====================================  ===========================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Do = Literal["nothing", "report", "connect", "reconcile"]

SETTLED = {("connected", "active"), ("suspended", "suspended")}
IN_FLIGHT = ("applying", "connecting")


@dataclass(frozen=True)
class Decision:
    do: Do
    step: str  # the planner's step, "connect", or "-" when none was needed
    gated: bool
    why: str


def needs_step(status: str, target: str) -> bool:
    """Whether the planner must be asked (and the host probed) at all: not for a
    provider where it should be, busy, failed or waiting on a person's decisions."""
    if status in IN_FLIGHT or status in ("error", "needs_input"):
        return False
    return (status, target) not in SETTLED


def decide(
    status: str,
    target: str,
    step: str | None,
    gated: bool,
    *,
    restart: bool,
    why: str = "",
    finish: bool = False,
) -> Decision:
    """``step``/``gated``: the planner's step for this provider (None when
    :func:`needs_step` said none was needed). ``restart``: ``connect`` started a daemon
    for it before (its host record is there). ``finish``: a ``reconcile`` was
    interrupted (its process is gone) and re-running it needs no person's yes."""
    if status == "applying" and finish:
        return Decision("reconcile", "finish", False, "a reconcile was interrupted: re-run it")
    if status in IN_FLIGHT:
        return Decision("nothing", "wait", False, f"{status}: a verb is in flight")
    if status == "error":
        return Decision("report", "recover", False, "error: its next action is a person's")
    if status == "needs_input":
        return Decision("report", "-", False, "open decisions: a person settles them")
    if step is None or (status, target) in SETTLED:
        return Decision("nothing", "none", False, f"{status}, as its target ({target}) says")
    if status == "unclaimed" and target == "active" and restart and step in ("none", "provision"):
        return Decision("connect", "connect", False, "its daemon is gone: connect starts it again")
    if step in ("none", "wait"):
        return Decision("nothing", step, False, why or step)
    if step == "recover":
        return Decision("report", step, False, why or "a failed state: plan shows the way back")
    if gated:
        return Decision("report", step, True, why or f"{step} needs a person's yes")
    return Decision("reconcile", step, False, why or step)


__all__ = ["IN_FLIGHT", "SETTLED", "Decision", "Do", "decide", "needs_step"]
