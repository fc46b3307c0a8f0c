"""The `ec2` Pulumi program: GPU worker instances in a subnet you already have.

The :class:`GpuWorkers` component mirrors ``templates/ec2/terraform``: a security
group (all outbound, ssh inbound only from ``ssh_ingress_cidrs``) in the chosen
subnet's VPC, ``worker_count`` instances (IMDSv2 required, gp3 root volume) and
each instance's declared run state (``aws.ec2transitgateway.InstanceState``, terraform's
``aws_ec2_instance_state``: ``stopped`` when
``target_status`` is ``suspended``, else ``running``; the disks are kept).
``pulumi_aws`` is imported when the component is built (it is in the
``pulumi-clouds`` extra), so the config model loads without it.

This file needs ``pydantic``, the helpers every vendor shares
(``dreamlake.stacks.support``) and, when run, ``pulumi`` and ``pulumi_aws``; a
copy of it is yours to edit. One code path, three ways
in: ``GpuWorkers(name, GpuWorkersArgs(...), opts)`` inside your own program
(its arguments ``pulumi.Input`` values; a :class:`Config` is accepted too);
``program(Config(...))`` inline from Automation API code (what ``dreamlake
provider plan/apply`` run); ``pulumi up`` in a project whose ``__main__.py`` is
this file (:func:`main` reads :class:`Config` from the stack config, e.g.
``dreamlake:region``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, cast

from dreamlake.stacks import support
from dreamlake.stacks.support import ComponentArgs, given_provider, is_input, lift
from dreamlake.stacks.support import ConfigError as ConfigError  # the vendor's, re-exported
from pydantic import BaseModel, ConfigDict, field_validator

if TYPE_CHECKING:
    import pulumi

DECISIONS: tuple[str, ...] = ("region", "subnet", "instance_type", "ami")
"""Config keys that are decisions (TEMPLATE.json ``decisions[].key``), in order."""

OUTPUTS: tuple[str, ...] = (
    "worker_host",
    "worker_user",
    "worker_hosts",
    "instance_ids",
    "security_group_id",
    "vpc_id",
    "region",
)
"""The stack outputs, the same names as the terraform template's ``outputs.tf``."""

TYPE = "dreamlake:ec2:GpuWorkers"
"""The component's Pulumi type token."""

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
    # Lifecycle intent: "suspended" stops the instances (disks kept), "active" runs them.
    target_status: Literal["active", "suspended"] = "active"

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


class GpuWorkersArgs(ComponentArgs):
    """The arguments of :class:`GpuWorkers`, in the provider SDKs' args-class style:
    each is a plain value or a ``pulumi.Input`` (e.g. ``subnet=subnet.id``). Plain
    values are validated as :class:`Config` validates them (a bad one raises
    :class:`ConfigError` here, before anything is declared); Outputs are taken as
    they are. ``worker_count`` must be plain: it is how many instances are declared.

    ``region``: None (the default) uses the stack's default ``aws`` provider (what
    ``aws:region`` in the stack config sets); a region given asks for a provider of
    the component's own in that region (so do the endpoint settings). A provider
    passed in ``opts`` wins over both. ``name_prefix``: the ``Name`` tag prefix and
    the ``dreamlake-provider`` tag (default: the component's name).
    ``security_group_ids``: groups of yours attached to the workers beside the
    component's own. Every other name is :class:`Config`'s.
    """

    subnet: pulumi.Input[str]
    instance_type: pulumi.Input[str]
    ami: pulumi.Input[str]
    region: pulumi.Input[str] | None
    worker_count: int
    name_prefix: pulumi.Input[str] | None
    root_volume_gb: pulumi.Input[float]
    associate_public_ip: pulumi.Input[bool]
    key_name: pulumi.Input[str] | None
    ssh_user: pulumi.Input[str]
    ssh_ingress_cidrs: pulumi.Input[Sequence[pulumi.Input[str]]]
    security_group_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    tags: pulumi.Input[Mapping[str, pulumi.Input[str]]]
    aws_endpoints: Mapping[str, str]
    aws_skip_credentials_validation: bool
    target_status: pulumi.Input[str]

    config_model = Config

    def __init__(
        self,
        *,
        subnet: pulumi.Input[str],
        instance_type: pulumi.Input[str],
        ami: pulumi.Input[str],
        region: pulumi.Input[str] | None = None,
        worker_count: int = 1,
        name_prefix: pulumi.Input[str] | None = None,
        root_volume_gb: pulumi.Input[float] = 100,
        associate_public_ip: pulumi.Input[bool] = True,
        key_name: pulumi.Input[str] | None = None,
        ssh_user: pulumi.Input[str] = "ubuntu",
        ssh_ingress_cidrs: pulumi.Input[Sequence[pulumi.Input[str]]] = (),
        security_group_ids: pulumi.Input[Sequence[pulumi.Input[str]]] = (),
        tags: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        aws_endpoints: Mapping[str, str] | None = None,
        aws_skip_credentials_validation: bool = False,
        target_status: pulumi.Input[str] = "active",
    ) -> None:
        if is_input(worker_count):
            raise TypeError(
                "worker_count must be a plain number: it is how many instances are declared"
            )
        given = dict(locals())
        given["tags"] = {} if tags is None else tags
        given["aws_endpoints"] = dict(aws_endpoints or {})
        for key in ("ssh_ingress_cidrs", "security_group_ids"):
            if isinstance(given[key], tuple):
                given[key] = list(given[key])
        self._take(given)


@cache
def component_class() -> Any:
    """:class:`GpuWorkers`, defined on first use so importing this file imports
    neither ``pulumi`` nor ``pulumi_aws``."""
    import pulumi
    import pulumi_aws as aws

    class GpuWorkers(pulumi.ComponentResource):
        """GPU worker instances in an existing subnet, every resource its child.

        ``GpuWorkers(name, args, opts)`` with a :class:`GpuWorkersArgs` (or a
        :class:`Config`, or the same names as keyword arguments). The ``aws``
        provider: one passed in ``opts`` (``providers=[...]`` or ``provider=``); else,
        when ``args.region`` (or an endpoint setting) is given, one of the
        component's own for it; else the stack's default provider. Physical names
        come from the component's name: the security group is auto-named from
        ``<name>-worker``, so any number of components share a VPC. Outputs are
        attributes of the same names (``worker_host``, ``instance_ids``, ...; the
        ``region`` is the one of the provider used); ``outputs`` maps them all.
        """

        def __init__(
            self,
            name: str,
            args: GpuWorkersArgs | Config | None = None,
            opts: pulumi.ResourceOptions | None = None,
            **kwargs: Any,
        ) -> None:
            # the cast names the type where a checker cannot resolve dreamlake.stacks
            args = cast(GpuWorkersArgs, GpuWorkersArgs.from_call(args, kwargs))
            super().__init__(TYPE, name, None, opts)
            self.args = args
            prefix = args.name_prefix if args.name_prefix is not None else name
            tags = lift(
                lambda t, p: {**t, "dreamlake": "true", "dreamlake-provider": p},
                args.tags,
                prefix,
            )
            provider = given_provider(opts, "aws")
            # A region (or an endpoint setting) asked for: a provider of our own for it.
            asked = args.region is not None or bool(args.aws_endpoints)
            if provider is None and (asked or args.aws_skip_credentials_validation):
                skip = args.aws_skip_credentials_validation
                provider = aws.Provider(
                    f"{name}-aws",
                    region=args.region if args.region is not None else aws.config.region,
                    endpoints=[aws.ProviderEndpointArgs(**args.aws_endpoints)]
                    if args.aws_endpoints
                    else None,
                    skip_credentials_validation=skip,
                    skip_requesting_account_id=skip,
                    skip_metadata_api_check=skip,
                    # As the terraform template's default_tags: the user's, then ours.
                    default_tags=aws.ProviderDefaultTagsArgs(tags=tags),
                    opts=pulumi.ResourceOptions(parent=self),
                )
            # None: the stack's default aws provider (or one the parent passes down).
            self.provider = provider
            child = pulumi.ResourceOptions(parent=self, provider=provider)
            invoke = pulumi.InvokeOptions(parent=self, provider=provider)
            subnet = aws.ec2.get_subnet_output(id=args.subnet, opts=invoke)
            ingress = lift(
                lambda cidrs: (
                    [
                        aws.ec2.SecurityGroupIngressArgs(
                            description="ssh",
                            from_port=22,
                            to_port=22,
                            protocol="tcp",
                            cidr_blocks=list(cidrs),
                        )
                    ]
                    if cidrs
                    else []
                ),
                args.ssh_ingress_cidrs,
            )
            group = aws.ec2.SecurityGroup(
                f"{name}-worker",  # no fixed name: auto-named from this one, never colliding
                description="dreamlake GPU workers: all outbound, ssh inbound only from "
                "ssh_ingress_cidrs",
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
                ingress=ingress,
                tags=tags,
                opts=child,
            )
            groups = pulumi.Output.all(group.id, args.security_group_ids).apply(
                lambda g: [g[0], *[x for x in g[1] if x != g[0]]]
            )
            workers = [
                aws.ec2.Instance(
                    f"{name}-worker-{i}",
                    ami=args.ami,
                    instance_type=args.instance_type,
                    subnet_id=args.subnet,
                    vpc_security_group_ids=groups,
                    associate_public_ip_address=args.associate_public_ip,
                    key_name=args.key_name,
                    root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(
                        volume_size=lift(int, args.root_volume_gb), volume_type="gp3"
                    ),
                    metadata_options=aws.ec2.InstanceMetadataOptionsArgs(http_tokens="required"),
                    tags=lift(lambda t, p, i=i: {**t, "Name": f"{p}-worker-{i}"}, tags, prefix),
                    opts=child,
                )
                for i in range(args.worker_count)
            ]
            state = lift(lambda s: "stopped" if s == "suspended" else "running", args.target_status)
            self.states = [
                aws.ec2transitgateway.InstanceState(
                    f"{name}-worker-{i}", instance_id=w.id, state=state, opts=child
                )
                for i, w in enumerate(workers)
            ]
            self.instances = workers
            self.security_group = group
            hosts = [
                pulumi.Output.all(w.public_ip, w.private_ip).apply(lambda ips: ips[0] or ips[1])
                for w in workers
            ]
            self.worker_host = hosts[0]
            self.worker_user = pulumi.Output.from_input(args.ssh_user)
            self.worker_hosts = pulumi.Output.all(*hosts)
            self.instance_ids = pulumi.Output.all(*[w.id for w in workers])
            self.security_group_id = group.id
            self.vpc_id = subnet.vpc_id
            # What was built: the region of the provider the resources went to.
            self.region = aws.get_region_output(opts=invoke).region
            self.outputs: dict[str, Any] = {k: getattr(self, k) for k in OUTPUTS}
            self.register_outputs(self.outputs)

    return GpuWorkers


def __getattr__(name: str) -> Any:
    if name == "GpuWorkers":
        return component_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def program(config: Config | GpuWorkersArgs, name: str = "dreamlake") -> Any:
    """The stack: one :class:`GpuWorkers` whose outputs become the stack outputs."""
    import pulumi

    workers = component_class()(name, config)
    for key, value in workers.outputs.items():
        pulumi.export(key, value)
    return workers


def load_config(values: dict[str, Any]) -> Config:
    """Validate raw config values; raise :class:`ConfigError` naming each key."""
    return support.load_config(Config, values)


def read_pulumi_config() -> Config:
    """Read :class:`Config` from the running stack's config with Pulumi's typed
    getters (``dreamlake.stacks.support.read_pulumi_config``)."""
    return support.read_pulumi_config(Config)


def main() -> None:
    program(read_pulumi_config())


if __name__ == "__main__":
    main()
