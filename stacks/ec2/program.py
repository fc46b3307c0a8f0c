"""The `ec2` Pulumi program: GPU worker instances in a subnet you already have.

It mirrors ``templates/ec2/terraform``: a security group (all outbound, ssh
inbound only from ``ssh_ingress_cidrs``) in the chosen subnet's VPC and
``worker_count`` instances. ``pulumi_aws`` is imported inside :func:`program`
(it is in the ``pulumi-clouds`` extra), so the config model loads without it.

This file is self-contained (``pydantic`` plus, when run, ``pulumi`` and
``pulumi_aws``) so a scaffolded copy is yours to edit. Configuration is read
from the stack's config in the project's namespace, e.g. ``dreamlake:region``.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

DECISIONS: tuple[str, ...] = ("region", "subnet", "instance_type", "ami")
"""Config keys that are decisions (TEMPLATE.json ``decisions[].key``), in order."""

_TEXT = (str, str | None)
_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]+$")
_SUBNET = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_INSTANCE = re.compile(r"^(g4dn|g4ad|g5|g5g|g6|g6e|gr6|p3|p3dn|p4d|p4de|p5|p5e|p5en)\.[0-9a-z]+$")
_AMI = re.compile(r"^ami-[0-9a-f]{8,17}$")
_PREFIX = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")


class Config(BaseModel):
    """The stack's config: the decisions first, then settings with defaults.
    Validators mirror the terraform ``validation`` blocks of ``variables.tf``."""

    model_config = ConfigDict(frozen=True, extra="ignore", coerce_numbers_to_str=True)

    # Decisions: no defaults.
    region: str
    subnet: str
    instance_type: str
    ami: str
    # Settings with sensible defaults.
    worker_count: int = 1
    name_prefix: str = "dreamlake"
    root_volume_gb: float = 100
    associate_public_ip: bool = True
    key_name: str | None = None
    ssh_user: str = "ubuntu"  # the AMI's login user, read by `dreamlake provider connect`
    ssh_ingress_cidrs: list[str] = []
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

    @field_validator("subnet")
    @classmethod
    def _subnet(cls, v: str) -> str:
        if not _SUBNET.match(v):
            raise ValueError(
                'The subnet_id must be a subnet ID such as "subnet-0123456789abcdef0".'
            )
        return v

    @field_validator("instance_type")
    @classmethod
    def _instance_type(cls, v: str) -> str:
        if not _INSTANCE.match(v):
            raise ValueError(
                'The instance_type must be a GPU instance type such as "g5.xlarge" (families '
                "g4dn, g4ad, g5, g5g, g6, g6e, gr6, p3, p3dn, p4d, p4de, p5, p5e, p5en)."
            )
        return v

    @field_validator("ami")
    @classmethod
    def _ami(cls, v: str) -> str:
        if not _AMI.match(v):
            raise ValueError('The ami_id must be an AMI ID such as "ami-0123456789abcdef0".')
        return v

    @field_validator("worker_count", mode="before")
    @classmethod
    def _worker_count(cls, v: Any) -> Any:
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or not (1 <= v <= 20 and float(v).is_integer())
        ):
            raise ValueError("The worker_count must be a whole number from 1 to 20.")
        return int(v)

    @field_validator("name_prefix")
    @classmethod
    def _name_prefix(cls, v: str) -> str:
        if not _PREFIX.match(v):
            raise ValueError("The name_prefix must match ^[a-z0-9][a-z0-9-]{0,31}$.")
        return v

    @field_validator("root_volume_gb")
    @classmethod
    def _root_volume_gb(cls, v: float) -> float:
        if not 30 <= v <= 16384:
            raise ValueError("The root_volume_gb must be between 30 and 16384.")
        return v

    @field_validator("ssh_ingress_cidrs")
    @classmethod
    def _cidrs(cls, v: list[str]) -> list[str]:
        for c in v:
            try:
                ipaddress.ip_network(c, strict=False)
                ok = "/" in c
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(
                    'Each entry of ssh_ingress_cidrs must be a CIDR block such as "203.0.113.0/24".'
                )
        return v


def program(config: Config) -> None:
    """Declare the security group and the worker instances."""
    import pulumi
    import pulumi_aws as aws

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
    invoke = pulumi.InvokeOptions(provider=provider)
    subnet = aws.ec2.get_subnet(id=config.subnet, opts=invoke)

    group = aws.ec2.SecurityGroup(
        "worker",
        name=f"{config.name_prefix}-worker",
        description="dreamlake GPU workers: all outbound, ssh inbound only from ssh_ingress_cidrs",
        vpc_id=subnet.vpc_id,
        egress=[
            aws.ec2.SecurityGroupEgressArgs(
                description="Outbound to the control plane, registries and data",
                from_port=0,
                to_port=0,
                protocol="-1",
                cidr_blocks=["0.0.0.0/0"],
            )
        ],
        ingress=[
            aws.ec2.SecurityGroupIngressArgs(
                description="ssh",
                from_port=22,
                to_port=22,
                protocol="tcp",
                cidr_blocks=config.ssh_ingress_cidrs,
            )
        ]
        if config.ssh_ingress_cidrs
        else [],
        opts=opts,
    )
    workers = [
        aws.ec2.Instance(
            f"worker-{i}",
            ami=config.ami,
            instance_type=config.instance_type,
            subnet_id=config.subnet,
            vpc_security_group_ids=[group.id],
            associate_public_ip_address=config.associate_public_ip,
            key_name=config.key_name,
            root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(
                volume_size=int(config.root_volume_gb), volume_type="gp3"
            ),
            metadata_options=aws.ec2.InstanceMetadataOptionsArgs(http_tokens="required"),
            tags={"Name": f"{config.name_prefix}-worker-{i}"},
            opts=opts,
        )
        for i in range(config.worker_count)
    ]
    hosts = [
        pulumi.Output.all(w.public_ip, w.private_ip).apply(lambda ips: ips[0] or ips[1])
        for w in workers
    ]
    pulumi.export("worker_host", hosts[0])
    pulumi.export("worker_user", config.ssh_user)
    pulumi.export("worker_hosts", pulumi.Output.all(*hosts))
    pulumi.export("instance_ids", pulumi.Output.all(*[w.id for w in workers]))
    pulumi.export("security_group_id", group.id)
    pulumi.export("vpc_id", subnet.vpc_id)
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
