"""Which launch failures mean "no capacity (or quota) there now", not "broken".

A refusal for capacity puts the provider in back-off and placement moves on to the
next provider; any other failure is the queue's ordinary error. Pure: it reads the
error's code and sentence, whatever launcher raised it.
"""

from __future__ import annotations

import re

# (pattern, the reason shown in the listing and the decision)
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        (r"InsufficientInstanceCapacity", "InsufficientInstanceCapacity"),
        (r"InstanceLimitExceeded", "InstanceLimitExceeded"),
        (r"VcpuLimitExceeded", "VcpuLimitExceeded"),
        (r"MaxSpotInstanceCountExceeded", "MaxSpotInstanceCountExceeded"),
        (r"InsufficientHostCapacity", "InsufficientHostCapacity"),
        (r"ZONE_RESOURCE_POOL_EXHAUSTED\w*", "ZONE_RESOURCE_POOL_EXHAUSTED"),
        (r"does not have enough resources available", "ZONE_RESOURCE_POOL_EXHAUSTED"),
        (r"QUOTA_EXCEEDED|Quota '\w+' exceeded", "QUOTA_EXCEEDED"),
        (r"exceeded quota", "Kubernetes ResourceQuota exceeded"),
        (r"QOSMax\w+|AssocMax\w+|job submit limit", "SLURM submit limit reached"),
        (r"partition\b.*\bfull|PartitionNodeLimit", "SLURM partition full"),
        (r"Requested node configuration is not available", "SLURM partition cannot fit it"),
        # a drained or inactive partition takes no job now (sbatch's own words)
        (r"Required partition not available", "SLURM partition not available"),
        (
            r"have no daemon of this provider|no free host|hosts have room for",
            "SSH pool has no free host",
        ),
    )
)


def capacity_refusal(detail: str) -> str | None:
    """The reason when ``detail`` (a launch error's sentence) is a capacity or quota
    refusal, else None."""
    for pattern, reason in _PATTERNS:
        if pattern.search(detail):
            return reason
    return None
