"""The pure deriver against every world-derived row of the spec's verb × world table."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.engine.backends.base import InfraState
from dreamlake.engine.contract.result import (
    Blocking,
    Claim,
    EditThenContinue,
    LockInfo,
    PlanCounts,
    Run,
)
from dreamlake.engine.world.derive import Observation, derive
from dreamlake.engine.world.record import ProviderRecord

TFVARS = "/p/.dream/providers/demo/terraform/terraform.tfvars"


def obs(
    *,
    backend: str = "terraform",
    blocking: tuple[Blocking, ...] = (),
    infra: InfraState | None = None,
    claims: Claim | None = None,
    dream_dir: str | None = None,
) -> Observation:
    rec = ProviderRecord(
        name="demo", vendor="local", backend=backend, template_version=1, engine_version="0"
    )  # type: ignore[arg-type]
    return Observation(
        name="demo",
        dir=Path("/p/.dream/providers/demo"),
        dream_dir=dream_dir,
        record=rec,
        template=None,
        blocking=blocking,
        infra=infra,
        claims=claims,
    )


UNSET = Blocking(key="region", reason="unset", file=TFVARS, line=3)
LIVE = Claim(live=2, gone=0, instances=["i-1", "i-2"])
NONE_LIVE = Claim(live=0, gone=1, instances=[])
HELD = LockInfo(state="held", path="x")
STALE = LockInfo(state="stale", path="x")


@pytest.mark.parametrize(
    ("world", "status", "next_cmd"),
    [
        (obs(), "scaffolded", "dreamlake provider plan -n demo"),
        (
            obs(blocking=(UNSET,)),
            "needs_input",
            "dreamlake provider create -n demo --continue",
        ),
        (
            obs(infra=InfraState(plan_fresh=True, plan=PlanCounts(add=1, change=0, destroy=0))),
            "ready",
            "dreamlake provider apply -n demo --yes",
        ),
        (obs(infra=InfraState(lock=HELD)), "applying", "dreamlake provider apply -n demo --yes"),
        (
            obs(infra=InfraState(lock=STALE, present=True)),
            "applying",
            "dreamlake provider apply -n demo --yes",
        ),
        (
            obs(infra=InfraState(present=True, resources=3)),
            "applied",
            "dreamlake provider connect -n demo",
        ),
        (
            obs(infra=InfraState(present=True), claims=NONE_LIVE),
            "unclaimed",
            "dreamlake provider connect -n demo",
        ),
        (obs(infra=InfraState(present=True), claims=LIVE), "connected", None),
        (obs(backend="none"), "scaffolded", "dreamlake provider connect -n demo"),
        (obs(backend="none", claims=NONE_LIVE), "unclaimed", "dreamlake provider connect -n demo"),
        (obs(backend="none", claims=LIVE), "connected", None),
        (
            obs(backend="none", blocking=(UNSET,)),
            "needs_input",
            "dreamlake provider create -n demo --continue",
        ),
    ],
)
def test_status_rows(world: Observation, status: str, next_cmd: str | None) -> None:
    d = derive(world)
    assert d.status == status
    if next_cmd is None:
        assert d.next_action is None
    else:
        assert d.next_action is not None and d.next_action.command == next_cmd


def test_connected_is_the_only_null_next_action() -> None:
    worlds = [
        obs(),
        obs(blocking=(UNSET,)),
        obs(infra=InfraState(plan_fresh=True)),
        obs(infra=InfraState(lock=HELD)),
        obs(infra=InfraState(present=True)),
        obs(infra=InfraState(present=True), claims=NONE_LIVE),
    ]
    assert all(derive(w).next_action is not None for w in worlds)


def test_needs_input_points_at_the_blocking_file() -> None:
    d = derive(obs(blocking=(UNSET,)))
    assert isinstance(d.next_action, EditThenContinue)
    assert d.next_action.file == TFVARS


def test_dream_dir_is_repeated_in_commands() -> None:
    d = derive(obs(dream_dir="/x y"))
    assert isinstance(d.next_action, Run)
    assert d.next_action.command == "dreamlake provider plan -n demo --dream-dir '/x y'"


def test_lock_wins_over_a_present_state_and_claims() -> None:
    assert derive(obs(infra=InfraState(present=True, lock=STALE), claims=LIVE)).status == "applying"


def test_stale_plan_is_not_ready() -> None:
    assert derive(obs(infra=InfraState(plan_fresh=False))).status == "scaffolded"


def test_fresh_plan_with_changes_over_applied_infra_is_ready() -> None:
    infra = InfraState(present=True, plan_fresh=True, plan=PlanCounts(add=1, change=0, destroy=0))
    d = derive(obs(infra=infra, claims=NONE_LIVE))
    assert d.status == "ready"
    assert d.next_action is not None and d.next_action.command.endswith("apply -n demo --yes")


def test_fresh_noop_plan_over_applied_infra_stays_applied() -> None:
    infra = InfraState(
        present=True,
        plan_fresh=True,
        plan_changes=False,
        plan=PlanCounts(add=0, change=0, destroy=0),
    )
    assert derive(obs(infra=infra)).status == "applied"
    assert derive(obs(infra=infra, claims=NONE_LIVE)).status == "unclaimed"


def test_connected_stays_terminal_over_a_pending_plan() -> None:
    infra = InfraState(present=True, plan_fresh=True, plan=PlanCounts(add=1, change=0, destroy=0))
    assert derive(obs(infra=infra, claims=LIVE)).status == "connected"
