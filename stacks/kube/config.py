"""The `kube` program's config model: :class:`Config` (the stack config, its
validators mirroring ``templates/kube/terraform/variables.tf``) and
:class:`GpuClusterArgs` (the component's arguments, plain values checked as
:class:`Config` checks them). Needs only ``pydantic`` and the helpers every vendor
shares; ``program.py`` declares what they describe."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from dreamlake.stacks import support
from dreamlake.stacks.support import ComponentArgs, ConfigError, is_input
from pydantic import (
    BaseModel,
    ConfigDict,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

if TYPE_CHECKING:
    import pulumi

DECISIONS: tuple[str, ...] = ("region", "cluster_name", "vpc", "node_type")
"""Config keys that are decisions (TEMPLATE.json ``decisions[].key``), in order."""

_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]+$")
_CLUSTER = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]{0,99}$")
_CIDR_SIZE = re.compile(r"/(1[6-9]|20)$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8}([0-9a-f]{9})?$")
_GPU = re.compile(r"^(g4dn|g5|g6|g6e|gr6|p3|p3dn|p4d|p4de|p5|p5e|p5en)\.[0-9a-z]+$")
_K8S = re.compile(r"^1\.[0-9]+$")
NODE_AMI_TYPES = (
    "AL2023_x86_64_NVIDIA",
    "AL2023_ARM_64_NVIDIA",
    "BOTTLEROCKET_x86_64_NVIDIA",
    "BOTTLEROCKET_ARM_64_NVIDIA",
    "AL2_x86_64_GPU",
)


class Config(BaseModel):
    """The stack's config: the decisions first, then settings with defaults.
    Validators mirror the terraform ``validation`` blocks of ``variables.tf``; one
    cross-field check (node_min <= node_desired <= node_max) reports a conflict
    that EKS would otherwise refuse at apply time."""

    model_config = ConfigDict(frozen=True, extra="ignore", coerce_numbers_to_str=True)

    # Decisions: no defaults.
    region: str
    cluster_name: str
    vpc: str
    node_type: list[str]
    # Settings with sensible defaults.
    kubernetes_version: str = "1.33"
    node_ami_type: str = "AL2023_x86_64_NVIDIA"
    capacity_type: str = "SPOT"
    node_min: int = 0
    node_desired: int = 1
    node_max: int = 4
    node_disk_gb: int = 100
    az_count: int = 2
    tags: dict[str, str] = {}
    # Endpoint settings (a local AWS API implementation), not decisions.
    aws_endpoints: dict[str, str] = {}
    aws_skip_credentials_validation: bool = False
    # Lifecycle intent; a cluster has no stopped state (see the module docstring).
    target_status: Literal["active", "suspended"] = "active"

    @field_validator("region")
    @classmethod
    def _region(cls, v: str) -> str:
        if not _REGION.match(v):
            raise ValueError('The region must be an AWS region name such as "us-east-1".')
        return v

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, v: str) -> str:
        if not _CLUSTER.match(v):
            raise ValueError(
                "The cluster_name must start with a letter and hold only letters, digits and "
                "dashes (at most 100 characters)."
            )
        return v

    @field_validator("vpc")
    @classmethod
    def _vpc(cls, v: str) -> str:
        try:
            ok = bool(_VPC_ID.match(v)) or (
                bool(ipaddress.ip_network(v, strict=False)) and bool(_CIDR_SIZE.search(v))
            )
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                "The vpc must be a CIDR block from /16 to /20 for a new VPC, such as "
                '"10.42.0.0/16", or an existing VPC\'s id to adopt, such as "vpc-0abc1234".'
            )
        return v

    @field_validator("node_type")
    @classmethod
    def _node_type(cls, v: list[str]) -> list[str]:
        if not v or not all(_GPU.match(t) for t in v):
            raise ValueError(
                'List at least one GPU instance type such as "g5.xlarge" (families g4dn, g5, '
                "g6, g6e, gr6, p3, p3dn, p4d, p4de, p5, p5e, p5en)."
            )
        return v

    @field_validator("kubernetes_version")
    @classmethod
    def _kubernetes_version(cls, v: str) -> str:
        if not _K8S.match(v):
            raise ValueError('The kubernetes_version must look like "1.31".')
        return v

    @field_validator("node_ami_type")
    @classmethod
    def _node_ami_type(cls, v: str) -> str:
        if v not in NODE_AMI_TYPES:
            raise ValueError(
                "The node_ami_type must be a GPU AMI type: AL2023_x86_64_NVIDIA, "
                "AL2023_ARM_64_NVIDIA, BOTTLEROCKET_x86_64_NVIDIA, BOTTLEROCKET_ARM_64_NVIDIA "
                "or AL2_x86_64_GPU."
            )
        return v

    @field_validator("capacity_type")
    @classmethod
    def _capacity_type(cls, v: str) -> str:
        if v not in ("ON_DEMAND", "SPOT"):
            raise ValueError("The capacity_type must be ON_DEMAND or SPOT.")
        return v

    @field_validator("node_max")
    @classmethod
    def _node_max(cls, v: int) -> int:
        if not 1 <= v <= 100:
            raise ValueError("The node_max must be a whole number between 1 and 100.")
        return v

    @field_validator("node_min")
    @classmethod
    def _node_min(cls, v: int) -> int:
        if v < 0:
            raise ValueError("The node_min must be a whole number of nodes, 0 or more.")
        return v

    @field_validator("node_desired")
    @classmethod
    def _node_desired(cls, v: int) -> int:
        if v < 0:
            raise ValueError("The node_desired must be a whole number of nodes, 0 or more.")
        return v

    @field_validator("az_count")
    @classmethod
    def _az_count(cls, v: int) -> int:
        if not 2 <= v <= 4:
            raise ValueError("The az_count must be between 2 and 4 (EKS needs two zones).")
        return v

    @model_validator(mode="after")
    def _node_bounds(self) -> Config:
        if not self.node_min <= self.node_desired <= self.node_max:
            raise PydanticCustomError(
                "conflict",
                "node_min <= node_desired <= node_max must hold (got {got}).",
                {
                    "keys": ["node_min", "node_desired", "node_max"],
                    "got": f"{self.node_min}, {self.node_desired}, {self.node_max}",
                },
            )
        return self


class GpuClusterArgs(ComponentArgs):
    """The arguments of :class:`GpuCluster`, in the provider SDKs' args-class style:
    each is a plain value or a ``pulumi.Input`` (e.g. ``vpc_id=vpc.id``). Plain
    values are validated as :class:`Config` validates them (a bad one raises
    :class:`ConfigError` here, before anything is declared; the node-size rule is
    checked when all three sizes are plain); Outputs are taken as they are.

    The network, one of: ``vpc`` (plain: a CIDR for a new VPC, or ``"vpc-…"`` to
    adopt an existing one and use its subnets), or ``vpc_id`` (an existing VPC, e.g.
    your ``aws.ec2.Vpc``'s id) with, optionally, ``subnet_ids`` (the subnets for the
    cluster and its nodes; default: the VPC's subnets, looked up). ``az_count`` must
    be plain: it is how many subnets a new VPC gets.

    ``region``: None (the default) uses the stack's default ``aws`` provider (what
    ``aws:region`` in the stack config sets); a region given asks for a provider of
    the component's own in that region (so do the endpoint settings). A provider
    passed in ``opts`` wins over both. ``cluster_name``: the EKS cluster's name,
    default ``<component name>-<stack>``; the node group is named after it. The IAM
    roles are auto-named from the component's name (IAM names are account-wide: two
    clusters in two regions, or one program as two stacks, never clash). Every other
    name is :class:`Config`'s.
    """

    node_type: pulumi.Input[Sequence[pulumi.Input[str]]]
    vpc: str | None
    vpc_id: pulumi.Input[str] | None
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]] | None
    region: pulumi.Input[str] | None
    cluster_name: pulumi.Input[str] | None
    kubernetes_version: pulumi.Input[str]
    node_ami_type: pulumi.Input[str]
    capacity_type: pulumi.Input[str]
    node_min: pulumi.Input[int]
    node_desired: pulumi.Input[int]
    node_max: pulumi.Input[int]
    node_disk_gb: pulumi.Input[int]
    az_count: int
    tags: pulumi.Input[Mapping[str, pulumi.Input[str]]]
    aws_endpoints: Mapping[str, str]
    aws_skip_credentials_validation: bool
    target_status: pulumi.Input[str]

    config_model = Config

    def __init__(
        self,
        *,
        node_type: pulumi.Input[Sequence[pulumi.Input[str]]],
        vpc: str | None = None,
        vpc_id: pulumi.Input[str] | None = None,
        subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]] | None = None,
        region: pulumi.Input[str] | None = None,
        cluster_name: pulumi.Input[str] | None = None,
        kubernetes_version: pulumi.Input[str] = "1.33",
        node_ami_type: pulumi.Input[str] = "AL2023_x86_64_NVIDIA",
        capacity_type: pulumi.Input[str] = "SPOT",
        node_min: pulumi.Input[int] = 0,
        node_desired: pulumi.Input[int] = 1,
        node_max: pulumi.Input[int] = 4,
        node_disk_gb: pulumi.Input[int] = 100,
        az_count: int = 2,
        tags: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        aws_endpoints: Mapping[str, str] | None = None,
        aws_skip_credentials_validation: bool = False,
        target_status: pulumi.Input[str] = "active",
    ) -> None:
        if is_input(vpc):
            raise TypeError(
                "vpc must be a plain value (it decides whether a VPC is created); pass an "
                "existing VPC's id that is an Output as vpc_id"
            )
        if is_input(az_count):
            raise TypeError("az_count must be a plain number: it is how many subnets are made")
        if (vpc is None) == (vpc_id is None):
            raise ConfigError(
                "dreamlake config: vpc: give either vpc (a CIDR for a new VPC, or an "
                "existing VPC's id) or vpc_id (an existing VPC), not both or neither"
            )
        if subnet_ids is not None and vpc is not None and not _VPC_ID.match(vpc):
            raise ConfigError(
                "dreamlake config: subnet_ids: subnets are made in a new VPC; "
                "subnet_ids goes with an existing VPC (vpc_id, or vpc = vpc-…)"
            )
        given = dict(locals())
        given["tags"] = {} if tags is None else tags
        given["aws_endpoints"] = dict(aws_endpoints or {})
        self._take(given)


def load_config(values: dict[str, Any]) -> Config:
    """Validate raw config values; raise :class:`ConfigError` naming each key."""
    return support.load_config(Config, values)
