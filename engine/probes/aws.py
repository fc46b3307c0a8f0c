"""AWS account probes, through boto3 (imported here, only when a probe runs).

Every call is bounded: short connect/read timeouts, one attempt, and the caller's
overall deadline. The endpoints in force (``dreamlake.engine.settings.endpoints``) apply to
the probes exactly as they apply to terraform, so a probe against a local AWS API
implementation or a private endpoint asks the same API the apply will use.

* ``aws-regions-in-use``: regions holding running or stopped instances. With AWS's
  own endpoints every enabled region is asked; with an endpoint override (a local
  implementation answers for every region) only ``probeRegions`` or a small list
  of common regions is; ``probeRegions: ["all"]`` asks every region regardless.
* ``aws-subnets``, ``aws-vpcs``, ``aws-gpu-amis``: in the region the provider's
  decisions name; None (not asked, so no hint) until a region is decided.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from ..settings.endpoints import Settings
from .credentials import aws_session_region

CONNECT_TIMEOUT = 2.0
READ_TIMEOUT = 5.0
FALLBACK_REGION = "us-east-1"

# Asked when an endpoint override is set and no probeRegions are configured.
OVERRIDE_REGIONS: tuple[str, ...] = (
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-northeast-1",
    "ap-southeast-1",
)

# ``probeRegions: ["all"]``: ask every region DescribeRegions names, even with an
# endpoint override (a private endpoint that really serves every region).
ALL_REGIONS: tuple[str, ...] = ("all",)

# Instance states that mean "this region is in use".
IN_USE_STATES = ["pending", "running", "stopping", "stopped"]

# Names of GPU-ready images AWS publishes (Deep Learning AMIs).
GPU_AMI_NAMES = ["Deep Learning*", "*DLAMI*"]
GPU_AMI_LIMIT = 5
LIST_LIMIT = 25


@dataclass(frozen=True)
class AwsContext:
    settings: Settings
    region: str | None  # the region the provider's decisions name, if any
    deadline: float  # time.monotonic() by which every call must be done
    session: list[Any] = field(default_factory=list, compare=False)  # the one boto3 session
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False)


class ProbeTimeout(Exception):
    """The probe's deadline passed before every region answered."""


def _client(ctx: AwsContext, region: str) -> Any:
    """An EC2 client for ``region``. Clients are built one at a time from the
    context's one session (which caches the service model) and may then be used
    from several threads."""
    from botocore.config import Config

    with ctx.lock:
        if not ctx.session:
            import boto3

            ctx.session.append(boto3.session.Session())
        session = ctx.session[0]
        cfg = Config(
            connect_timeout=CONNECT_TIMEOUT,
            read_timeout=READ_TIMEOUT,
            retries={"max_attempts": 1, "mode": "standard"},
            user_agent_extra="dreamlake-probe",
        )
        return session.client(
            "ec2",
            region_name=region,
            endpoint_url=ctx.settings.aws.endpoint_for("ec2"),
            config=cfg,
        )


def _home_region(ctx: AwsContext) -> str:
    return ctx.region or aws_session_region() or FALLBACK_REGION


def _probe_regions(ctx: AwsContext) -> list[str]:
    configured = ctx.settings.aws.probe_regions
    if configured and configured != ALL_REGIONS:
        return list(configured)
    if ctx.settings.aws.overridden and configured != ALL_REGIONS:
        regions = list(OVERRIDE_REGIONS)
        home = _home_region(ctx)
        if home not in regions:
            regions.insert(0, home)
        return regions
    answer = _client(ctx, _home_region(ctx)).describe_regions(AllRegions=False)
    return sorted(r["RegionName"] for r in answer.get("Regions", []))


def _region_in_use(client: Any) -> bool:
    answer = client.describe_instances(
        Filters=[{"Name": "instance-state-name", "Values": IN_USE_STATES}],
        MaxResults=5,
    )
    return any(r.get("Instances") for r in answer.get("Reservations", []))


def regions_in_use(ctx: AwsContext) -> list[str]:
    regions = _probe_regions(ctx)
    found: list[str] = []
    pool = ThreadPoolExecutor(max_workers=min(8, max(1, len(regions))))
    try:
        futures = {pool.submit(_region_in_use, _client(ctx, r)): r for r in regions}
        done, pending = wait(futures, timeout=max(0.0, ctx.deadline - time.monotonic()))
        if pending:
            raise ProbeTimeout(f"{len(pending)} of {len(regions)} regions did not answer in time")
        denied = 0
        for fut in done:
            try:
                in_use = fut.result()
            except Exception as exc:
                if not _denied(exc):
                    raise  # a partial list would mislead: the probe fails as a whole
                denied += 1  # a region closed to these credentials (policy, opt-in)
                continue
            if in_use:
                found.append(futures[fut])
        if regions and denied == len(regions):
            raise PermissionError("every region refused these credentials")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return sorted(found)


# Error codes meaning "these credentials may not look at this region".
_DENIED = {
    "AccessDenied",
    "AccessDeniedException",
    "AuthFailure",
    "OptInRequired",
    "UnauthorizedOperation",
}


def _denied(exc: Exception) -> bool:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return False
    return response.get("Error", {}).get("Code") in _DENIED


def subnets(ctx: AwsContext) -> list[str] | None:
    if not ctx.region:
        return None
    answer = _client(ctx, ctx.region).describe_subnets(MaxResults=100)
    rows = answer.get("Subnets", [])
    # Non-default subnets first (a team's own network), then by VPC and zone.
    rows.sort(
        key=lambda s: (
            bool(s.get("DefaultForAz")),
            s.get("VpcId", ""),
            s.get("AvailabilityZone", ""),
        )
    )
    return [s["SubnetId"] for s in rows][:LIST_LIMIT]


def vpcs(ctx: AwsContext) -> list[str] | None:
    region = ctx.region
    if not region:
        return None
    answer = _client(ctx, region).describe_vpcs(MaxResults=100)
    out = []
    for v in sorted(
        answer.get("Vpcs", []), key=lambda v: (bool(v.get("IsDefault")), v.get("VpcId", ""))
    ):
        out.append(f"{v['VpcId']} ({v.get('CidrBlock', '?')})")
    return out[:LIST_LIMIT]


def gpu_amis(ctx: AwsContext) -> list[str] | None:
    if not ctx.region:
        return None
    answer = _client(ctx, ctx.region).describe_images(
        Owners=["amazon"],
        Filters=[
            {"Name": "name", "Values": GPU_AMI_NAMES},
            {"Name": "state", "Values": ["available"]},
        ],
    )
    images = sorted(answer.get("Images", []), key=lambda i: i.get("CreationDate", ""), reverse=True)
    return [i["ImageId"] for i in images][:GPU_AMI_LIMIT]


PROBES: dict[str, Callable[[AwsContext], list[str] | None]] = {
    "aws-regions-in-use": regions_in_use,
    "aws-subnets": subnets,
    "aws-vpcs": vpcs,
    "aws-gpu-amis": gpu_amis,
}
