"""The planner, cell by cell: every (actual, target) for both capabilities, and the
gated flag for every gating set."""

from __future__ import annotations

import itertools

import pytest
from dreamlake.engine.lifecycle.gating import ACTIONS, DEFAULT
from dreamlake.engine.lifecycle.planner import ACTUALS, plan_step

NONE: frozenset[str] = frozenset()

STATEFUL = {
    ("absent", "active"): "provision",
    ("absent", "suspended"): "resume",  # the vendor finds out whether the state survived
    ("provisioning", "active"): "wait",
    ("provisioning", "suspended"): "wait",
    ("active", "active"): "none",
    ("active", "suspended"): "suspend",
    ("suspended", "active"): "resume",
    ("suspended", "suspended"): "none",
    ("failed", "active"): "recover",
    ("failed", "suspended"): "recover",
}

STATELESS = {
    **STATEFUL,
    ("absent", "suspended"): "none",
    ("active", "suspended"): "deprovision",
    ("suspended", "active"): "provision",
}


def test_the_tables_cover_all_ten_cells() -> None:
    cells = set(itertools.product(ACTUALS, ("active", "suspended")))
    assert len(cells) == 10
    assert set(STATEFUL) == cells == set(STATELESS)


@pytest.mark.parametrize(("cell", "step"), sorted(STATEFUL.items()))
def test_stateful_cell(cell: tuple[str, str], step: str) -> None:
    got = plan_step(*cell, True, NONE)
    assert got.action == step
    assert got.gated is False
    assert got.why


@pytest.mark.parametrize(("cell", "step"), sorted(STATELESS.items()))
def test_stateless_cell(cell: tuple[str, str], step: str) -> None:
    assert plan_step(*cell, False, NONE).action == step


@pytest.mark.parametrize("stateful", [True, False])
@pytest.mark.parametrize("cell", sorted(STATEFUL))
def test_gated_exactly_when_the_step_is_in_the_set(cell: tuple[str, str], stateful: bool) -> None:
    for n in range(len(ACTIONS) + 1):
        for combo in itertools.combinations(ACTIONS, n):
            gating = frozenset(combo)
            step = plan_step(*cell, stateful, gating)
            assert step.gated == (step.action in gating), (cell, gating, step)


def test_default_gating_gates_spending_and_destroying_only() -> None:
    assert plan_step("absent", "active", True, DEFAULT).gated  # provision
    assert plan_step("active", "suspended", False, DEFAULT).gated  # deprovision
    assert not plan_step("active", "suspended", True, DEFAULT).gated  # suspend
    assert not plan_step("suspended", "active", True, DEFAULT).gated  # resume
    assert not plan_step("failed", "active", True, frozenset(ACTIONS)).gated  # recover: a plan


def test_unknown_cell_is_an_error() -> None:
    with pytest.raises(ValueError):
        plan_step("gone", "active", True, NONE)
