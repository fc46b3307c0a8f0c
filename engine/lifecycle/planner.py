"""The transition planner: ``(actual, target, capability, gating) → step``. Pure.

The actual status (5) is derived from the world, the target status (2) is desired
state read from the provider's configuration; the planner crosses the two and names
one step. It decides *what*; the vendor code decides *how* (and whether a resume
can find its state). The table, for a vendor with the stateful lifecycle:

=============  ===========  ===========
actual         target       step
=============  ===========  ===========
absent         active       provision
absent         suspended    resume (the vendor finds out whether the state survived)
provisioning   active       wait
provisioning   suspended    wait (suspend once it has landed)
active         active       none
active         suspended    suspend
suspended      active       resume
suspended      suspended    none
failed         active       recover (plan, never apply)
failed         suspended    recover
=============  ===========  ===========

Without the stateful lifecycle (``statefulLifecycle: false``) suspending is
destroying and resuming is provisioning: ``active → suspended`` is ``deprovision``,
``suspended``/``absent`` with target ``active`` is ``provision``, and
``absent + suspended`` is ``none`` (nothing to keep).

A daemon-level provider that was suspended on purpose and whose supervisor entry
went away behind our back (its tmux session killed) reads ``absent``; resuming it
(``kept``: the target it had was ``suspended``) is still ``resume`` — the vendor
finds out whether the state it kept survived — never a fresh ``provision``, so the
step ``status`` offers for a ``suspended`` provider is the step the verb takes.

A step whose action is in the gating set comes back with ``gated=True``: it runs
only with a person's yes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .gating import is_gated

Actual = Literal["absent", "provisioning", "active", "suspended", "failed"]
ACTUALS: tuple[str, ...] = ("absent", "provisioning", "active", "suspended", "failed")
StepAction = Literal["provision", "suspend", "resume", "deprovision", "wait", "none", "recover"]

_STATEFUL: dict[tuple[str, str], tuple[StepAction, str]] = {
    ("absent", "active"): ("provision", "nothing is there and the target is active"),
    ("absent", "suspended"): (
        "resume",
        "nothing is running but the target is suspended: the state it kept may have "
        "survived; resume finds out",
    ),
    ("provisioning", "active"): ("wait", "an apply or a connect is in flight"),
    ("provisioning", "suspended"): ("wait", "an apply or a connect is in flight; suspend after"),
    ("active", "active"): ("none", "running, as it should be"),
    ("active", "suspended"): ("suspend", "running, but the target is suspended"),
    ("suspended", "active"): ("resume", "suspended, but the target is active"),
    ("suspended", "suspended"): ("none", "suspended, as it should be"),
    ("failed", "active"): ("recover", "the last run failed or left a partial state"),
    ("failed", "suspended"): ("recover", "the last run failed or left a partial state"),
}

_STATELESS: dict[tuple[str, str], tuple[StepAction, str]] = {
    **_STATEFUL,
    ("absent", "suspended"): ("none", "nothing is there, and this vendor keeps no state"),
    ("active", "suspended"): (
        "deprovision",
        "this vendor cannot stop with its state kept: suspending destroys it",
    ),
    ("suspended", "active"): (
        "provision",
        "this vendor cannot resume a kept state: resuming provisions afresh",
    ),
}


@dataclass(frozen=True)
class Step:
    action: StepAction
    gated: bool
    why: str


KEPT_WHY = (
    "suspended on purpose, its supervisor entry gone since: resume finds out whether "
    "the state it kept survived"
)


def plan_step(
    actual: str, target: str, stateful: bool, gating: frozenset[str], *, kept: bool = False
) -> Step:
    """The one step that moves ``actual`` towards ``target``. ``kept``: the provider
    was suspended on purpose (its target was ``suspended`` before this run)."""
    if kept and stateful and actual == "absent" and target == "active":
        return Step("resume", is_gated("resume", gating), KEPT_WHY)
    table = _STATEFUL if stateful else _STATELESS
    try:
        action, why = table[(actual, target)]
    except KeyError:
        raise ValueError(f"no planner cell for actual={actual!r}, target={target!r}") from None
    return Step(action, is_gated(action, gating), why)


__all__ = ["ACTUALS", "Actual", "Step", "StepAction", "plan_step"]
