"""A live drift record in the deriver: no new state; an applied, unclaimed or
connected provider says "drift" in ``degraded``, lists the resources in ``drift``
and names ``plan`` as its next action. Elsewhere the record changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.engine.backends.base import InfraState
from dreamlake.engine.backends.driftrecord import DriftRecord
from dreamlake.engine.contract.result import Claim, DriftedResource, LockInfo, PlanCounts, Run
from dreamlake.engine.world.derive import Observation
from dreamlake.engine.world.observe import to_result
from dreamlake.engine.world.record import ProviderRecord

SEEN = "2026-01-01T00:00:00+00:00"
SG = DriftedResource(
    address="aws_security_group.web", action="update", attributes=["tags.team"], seen_at=SEEN
)
DRIFT = DriftRecord(backend="terraform", seen_at=SEEN, state={"serial": 1}, resources=(SG,))
CLEAN = DriftRecord(backend="terraform", seen_at=SEEN, state={"serial": 1})
PLAN = Run(command="dreamlake provider plan -n demo")


def obs(infra: InfraState, claims: Claim | None = None) -> Observation:
    rec = ProviderRecord(
        name="demo", vendor="local", backend="terraform", template_version=1, engine_version="0"
    )  # type: ignore[arg-type]
    return Observation(
        name="demo",
        dir=Path("/p/.dream/providers/demo"),
        dream_dir=None,
        record=rec,
        template=None,
        infra=infra,
        claims=claims,
        degraded=("no-probe",),
    )


@pytest.mark.parametrize(
    ("claims", "status"),
    [
        (None, "applied"),
        (Claim(live=0, gone=1), "unclaimed"),
        (Claim(live=1, gone=0, instances=["i-1"]), "connected"),
    ],
)
def test_drifted_applied_states_name_plan_and_list_the_resources(
    claims: Claim | None, status: str
) -> None:
    res = to_result(obs(InfraState(present=True, resources=1, drift=DRIFT), claims))
    assert res.status == status and res.next_action == PLAN
    assert res.degraded == ["no-probe", "drift"]
    assert res.drift == [SG]
    assert res.to_wire()["drift"][0]["seenAt"] == SEEN


def test_a_clean_check_or_no_record_changes_nothing() -> None:
    for drift in (None, CLEAN):
        res = to_result(obs(InfraState(present=True, drift=drift), Claim(live=1, gone=0)))
        assert res.status == "connected" and res.next_action is None
        assert "drift" not in (res.degraded or []) and res.drift is None


def test_other_states_keep_their_answer() -> None:
    ready = InfraState(
        present=True, plan_fresh=True, plan=PlanCounts(add=0, change=1, destroy=0), drift=DRIFT
    )
    res = to_result(obs(ready, Claim(live=0, gone=0)))
    assert res.status == "ready" and res.drift is None and "apply" in res.next_action.command  # type: ignore[union-attr]
    busy = to_result(obs(InfraState(present=True, lock=LockInfo(state="held"), drift=DRIFT)))
    assert busy.status == "applying" and busy.drift is None
