"""The `kube` Pulumi program: an EKS cluster with a GPU node group.

It mirrors ``templates/kube/terraform``: a VPC across ``az_count`` zones with
public subnets, the cluster and node IAM roles, the EKS cluster and a GPU node
group (tainted ``nvidia.com/gpu``), plus a ``dreamlake`` namespace created through
``pulumi_kubernetes`` for the daemon's pods. ``pulumi_aws`` and
``pulumi_kubernetes`` are imported inside :func:`program` (they are in the
``pulumi-clouds`` extra), so the config model loads without them.

This file is self-contained so a scaffolded copy is yours to edit. Configuration
is read from the stack's config in the project's namespace, e.g. ``dreamlake:vpc``.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

DECISIONS: tuple[str, ...] = ("region", "cluster_name", "vpc", "node_type")
"""Config keys that are decisions (TEMPLATE.json ``decisions[].key``), in order."""

_TEXT = (str, str | None)
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


def program(config: Config) -> None:
    """Declare the VPC, the IAM roles, the cluster, the GPU node group and a namespace."""
    import pulumi
    import pulumi_aws as aws
    import pulumi_kubernetes as k8s

    skip = config.aws_skip_credentials_validation
    provider = aws.Provider(
        "aws",
        region=config.region,
        endpoints=[aws.ProviderEndpointArgs(**config.aws_endpoints)]
        if config.aws_endpoints
        else None,
        skip_credentials_validation=skip,
        skip_requesting_account_id=skip,
        skip_metadata_api_check=skip,
        default_tags=aws.ProviderDefaultTagsArgs(tags=config.tags) if config.tags else None,
    )
    opts = pulumi.ResourceOptions(provider=provider)
    name = config.cluster_name
    zones = aws.get_availability_zones(
        state="available", opts=pulumi.InvokeOptions(provider=provider)
    ).names[: config.az_count]
    if _VPC_ID.match(config.vpc):
        # Adopt: the VPC's own subnets carry the cluster; nothing of its network is created.
        vpc_id: Any = config.vpc
        subnet_ids: Any = aws.ec2.get_subnets(
            filters=[aws.ec2.GetSubnetsFilterArgs(name="vpc-id", values=[config.vpc])],
            opts=pulumi.InvokeOptions(provider=provider),
        ).ids
    else:
        net = ipaddress.ip_network(config.vpc, strict=False)
        blocks = list(net.subnets(prefixlen_diff=4))

        vpc = aws.ec2.Vpc(
            "vpc",
            cidr_block=config.vpc,
            enable_dns_support=True,
            enable_dns_hostnames=True,
            tags={"Name": f"{name}-vpc"},
            opts=opts,
        )
        igw = aws.ec2.InternetGateway("igw", vpc_id=vpc.id, tags={"Name": f"{name}-igw"}, opts=opts)
        routes = aws.ec2.RouteTable(
            "public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags={"Name": f"{name}-public"},
            opts=opts,
        )
        subnets = []
        for i, zone in enumerate(zones):
            subnet = aws.ec2.Subnet(
                f"public-{i}",
                vpc_id=vpc.id,
                cidr_block=str(blocks[i]),
                availability_zone=zone,
                map_public_ip_on_launch=True,
                tags={
                    "Name": f"{name}-public-{zone}",
                    "kubernetes.io/role/elb": "1",
                    f"kubernetes.io/cluster/{name}": "shared",
                },
                opts=opts,
            )
            aws.ec2.RouteTableAssociation(
                f"public-{i}", subnet_id=subnet.id, route_table_id=routes.id, opts=opts
            )
            subnets.append(subnet)
        vpc_id, subnet_ids = vpc.id, [s.id for s in subnets]

    def assume(service: str) -> str:
        return json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": "sts:AssumeRole",
                        "Principal": {"Service": service},
                    }
                ],
            }
        )

    cluster_role = aws.iam.Role(
        "cluster", name=f"{name}-cluster", assume_role_policy=assume("eks.amazonaws.com"), opts=opts
    )
    cluster_policy = aws.iam.RolePolicyAttachment(
        "cluster",
        role=cluster_role.name,
        policy_arn="arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",
        opts=opts,
    )
    node_role = aws.iam.Role(
        "node", name=f"{name}-node", assume_role_policy=assume("ec2.amazonaws.com"), opts=opts
    )
    node_policies = [
        aws.iam.RolePolicyAttachment(
            f"node-{arn.rsplit('/', 1)[1]}", role=node_role.name, policy_arn=arn, opts=opts
        )
        for arn in (
            "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
            "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
            "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        )
    ]
    cluster = aws.eks.Cluster(
        "cluster",
        name=name,
        version=config.kubernetes_version,
        role_arn=cluster_role.arn,
        vpc_config=aws.eks.ClusterVpcConfigArgs(
            subnet_ids=subnet_ids,
            endpoint_public_access=True,
            endpoint_private_access=True,
        ),
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[cluster_policy]),
    )
    group = aws.eks.NodeGroup(
        "gpu",
        cluster_name=cluster.name,
        node_group_name=f"{name}-gpu",
        node_role_arn=node_role.arn,
        subnet_ids=subnet_ids,
        ami_type=config.node_ami_type,
        capacity_type=config.capacity_type,
        instance_types=config.node_type,
        disk_size=config.node_disk_gb,
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(
            min_size=config.node_min, desired_size=config.node_desired, max_size=config.node_max
        ),
        labels={"dreamlake/gpu": "true"},
        taints=[
            aws.eks.NodeGroupTaintArgs(key="nvidia.com/gpu", value="true", effect="NO_SCHEDULE")
        ],
        opts=pulumi.ResourceOptions(
            provider=provider,
            depends_on=node_policies,
            ignore_changes=["scalingConfig.desiredSize"],
        ),
    )
    kubeconfig = pulumi.Output.all(
        cluster.endpoint, cluster.certificate_authority.data, cluster.name
    ).apply(
        lambda a: json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "eks",
                "clusters": [
                    {"name": "eks", "cluster": {"server": a[0], "certificate-authority-data": a[1]}}
                ],
                "contexts": [{"name": "eks", "context": {"cluster": "eks", "user": "eks"}}],
                "users": [
                    {
                        "name": "eks",
                        "user": {
                            "exec": {
                                "apiVersion": "client.authentication.k8s.io/v1beta1",
                                "command": "aws",
                                "args": [
                                    "eks",
                                    "get-token",
                                    "--cluster-name",
                                    a[2],
                                    "--region",
                                    config.region,
                                ],
                            }
                        },
                    }
                ],
            }
        )
    )
    cluster_provider = k8s.Provider("eks", kubeconfig=kubeconfig)
    k8s.core.v1.Namespace(
        "dreamlake",
        metadata={"name": "dreamlake"},
        opts=pulumi.ResourceOptions(provider=cluster_provider, depends_on=[group]),
    )

    pulumi.export("worker_host", cluster.endpoint.apply(lambda e: e.removeprefix("https://")))
    pulumi.export("cluster_name", cluster.name)
    pulumi.export("cluster_endpoint", cluster.endpoint)
    pulumi.export("cluster_ca_data", cluster.certificate_authority.data)
    pulumi.export("node_group", group.node_group_name)
    pulumi.export("vpc_id", vpc_id)
    pulumi.export("region", config.region)


class ConfigError(Exception):
    """The stack config does not satisfy :class:`Config`. One line per key:
    ``dreamlake config: <key>: <what is wrong>``."""


def load_config(values: dict[str, Any]) -> Config:
    """Validate raw config values; raise :class:`ConfigError` naming each key."""
    try:
        return Config.model_validate(values)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            msg = "not set" if err["type"] == "missing" else str(err["msg"])
            msg = msg.removeprefix("Value error, ")
            if err["loc"]:
                keys = [".".join(str(p) for p in err["loc"])]
            else:  # a cross-field conflict names its keys
                keys = [str(k) for k in (err.get("ctx") or {}).get("keys") or ["(config)"]]
            lines += [f"dreamlake config: {key}: {msg}" for key in keys]
        raise ConfigError("\n".join(lines)) from None


def read_pulumi_config() -> Config:
    """Read every field of :class:`Config` from the running stack's config."""
    import pulumi

    cfg = pulumi.Config()
    values: dict[str, Any] = {}
    for name, field in Config.model_fields.items():
        raw = cfg.get(name)
        if raw is None:
            continue
        if field.annotation in _TEXT:
            values[name] = raw
        else:
            try:
                values[name] = json.loads(raw)
            except ValueError:
                values[name] = raw
    return load_config(values)


def main() -> None:
    program(read_pulumi_config())


if __name__ == "__main__":
    main()
