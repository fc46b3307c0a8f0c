"""The deriver's row for an apply that failed part-way: ``error`` whose recovery is
``plan`` (never ``apply``, never ``connect``), whatever the claims say."""

from __future__ import annotations

from pathlib import Path

from dreamlake.engine.backends.base import InfraState
from dreamlake.engine.contract.result import Claim, EditThenContinue
from dreamlake.engine.world.derive import Observation, derive
from dreamlake.engine.world.observe import to_result
from dreamlake.engine.world.record import ProviderRecord

DIR = Path("/p/.dream/providers/demo")


def obs(infra: InfraState, claims: Claim | None = None) -> Observation:
    rec = ProviderRecord(name="demo", vendor="ec2", template_version=1, engine_version="0")
    return Observation("demo", DIR, None, rec, None, infra=infra, claims=claims)


def test_a_failed_part_way_apply_is_an_error_with_plan_as_recovery() -> None:
    infra = InfraState(present=True, resources=1, failed_apply=("aws_security_group.worker",))
    for claims in (None, Claim(live=0, gone=0), Claim(live=1, gone=0, instances=["i-1"])):
        dv = derive(obs(infra, claims))
        assert dv.status == "error"
        assert dv.next_action == EditThenContinue(
            file=str(DIR / "terraform"), command="dreamlake provider plan -n demo"
        )
    res = to_result(obs(infra))
    # Found in the world, reported coherently: status exits 0 (the tool did its job).
    assert res.kind == "partial_apply" and res.exit_code == 0
    assert "aws_security_group.worker" in (res.error or "") and res.resources == 1


def test_nothing_created_is_said_too() -> None:
    res = to_result(obs(InfraState(present=False, failed_apply=())))
    assert res.status == "error" and "created nothing" in (res.error or "")


def test_a_held_lock_still_reads_applying_first() -> None:
    from dreamlake.engine.contract.result import LockInfo

    infra = InfraState(present=True, lock=LockInfo(state="held"), failed_apply=("x.y",))
    assert derive(obs(infra)).status == "applying"
