"""The prose of a drifted provider: each resource with its changed attributes, the
hint on ``degraded`` and ``plan`` as the next line."""

from __future__ import annotations

from dreamlake.cli.render import render
from dreamlake.engine.contract.result import Claim, DriftedResource, ProviderLifecycleResult, Run

SEEN = "2026-01-01T00:00:00+00:00"


def test_drift_lines() -> None:
    drift = [
        DriftedResource(
            address="aws_security_group.web",
            action="update",
            attributes=["ingress", "tags.team"],
            seen_at=SEEN,
        ),
        DriftedResource(address="aws_instance.web", action="delete", seen_at=SEEN),
    ]
    r = ProviderLifecycleResult(
        status="connected",
        provider="lab",
        server="",
        namespace="default",
        claim=Claim(live=1, gone=0, instances=["i-1"]),
        degraded=["drift"],
        drift=drift,
        next_action=Run(command="dreamlake provider plan -n lab"),
    )
    text = render(r)
    assert (
        f"⚠ drift — 2 resources changed outside since the state was written (seen {SEEN}):" in text
    )
    assert "   · aws_security_group.web — update: ingress, tags.team" in text
    assert "   · aws_instance.web — delete" in text
    assert "degraded: drift (the infrastructure changed outside its state)" in text
    assert text.splitlines()[-1] == "next: dreamlake provider plan -n lab"
