"""What a pass does for one provider, from its status and the planner's step (pure)."""

from __future__ import annotations

import pytest
from dreamlake.engine.watcher.decide import decide, needs_step


@pytest.mark.parametrize(
    ("status", "target", "asked"),
    [
        ("connected", "active", False),
        ("suspended", "suspended", False),
        ("applying", "active", False),
        ("connecting", "active", False),
        ("error", "active", False),
        ("needs_input", "active", False),
        ("unclaimed", "active", True),
        ("connected", "suspended", True),
        ("suspended", "active", True),
        ("ready", "active", True),
    ],
)
def test_the_planner_is_asked_only_when_a_step_may_be_due(
    status: str, target: str, asked: bool
) -> None:
    assert needs_step(status, target) is asked


def test_decisions() -> None:
    # Where it should be, busy, failed, waiting on a person: nothing performed.
    assert decide("connected", "active", None, False, restart=True).do == "nothing"
    assert decide("applying", "active", "wait", False, restart=True).do == "nothing"
    assert decide("error", "active", None, False, restart=True).do == "report"
    assert decide("needs_input", "active", None, False, restart=False).do == "report"
    # A daemon that died where connect started one: connect, never gated.
    d = decide("unclaimed", "active", "provision", True, restart=True)
    assert (d.do, d.step, d.gated) == ("connect", "connect", False)
    # Never connected: the planner's step, gated as the provider says.
    d = decide("unclaimed", "active", "provision", True, restart=False)
    assert (d.do, d.step, d.gated) == ("report", "provision", True)
    # A gated step is reported, an ungated one performed by reconcile.
    d = decide("connected", "suspended", "suspend", True, restart=True)
    assert (d.do, d.gated) == ("report", True)
    d = decide("connected", "suspended", "suspend", False, restart=True)
    assert (d.do, d.step) == ("reconcile", "suspend")
    d = decide("suspended", "active", "resume", False, restart=True)
    assert (d.do, d.step) == ("reconcile", "resume")
    # Recovery is a person's (plan, never apply); waiting is nothing.
    assert decide("applied", "active", "recover", False, restart=True).do == "report"
    assert decide("unclaimed", "suspended", "wait", False, restart=True).do == "nothing"
