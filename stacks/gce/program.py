"""The `gce` Pulumi program: one GPU VM in a Google Cloud project you already have.

The :class:`GpuVm` component mirrors ``templates/gce/terraform``: a Compute Engine
instance with a GPU, an ephemeral public IP and the NVIDIA driver installed. Its
``desired_status`` follows ``target_status``: ``TERMINATED`` (stopped, the disk
kept) when ``suspended``, else ``RUNNING``. ``pulumi_gcp`` is imported when the
component is built (it is in the ``pulumi-clouds`` extra), so the config model
loads without it.

This file needs ``pydantic``, the helpers every vendor shares
(``dreamlake.stacks.support``) and, when run, ``pulumi`` and ``pulumi_gcp``; a
copy of it is yours to edit. One code path, three ways
in: ``GpuVm(name, GpuVmArgs(...), opts)`` inside your own program
(its arguments ``pulumi.Input`` values; a :class:`Config` is accepted too); ``program(Config(...))``
inline from Automation API code (what ``dreamlake provider plan/apply`` run);
``pulumi up`` in a project whose ``__main__.py`` is this file (:func:`main` reads
:class:`Config` from the stack config, e.g. ``dreamlake:zone``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, cast

from dreamlake.stacks import support
from dreamlake.stacks.support import ComponentArgs, given_provider, lift
from dreamlake.stacks.support import ConfigError as ConfigError  # the vendor's, re-exported
from pydantic import BaseModel, ConfigDict, field_validator

if TYPE_CHECKING:
    import pulumi

DECISIONS: tuple[str, ...] = ("project", "zone", "gpu_type")
"""Config keys that are decisions (TEMPLATE.json ``decisions[].key``), in order."""

OUTPUTS: tuple[str, ...] = (
    "worker_host",
    "worker_user",
    "internal_ip",
    "instance_name",
    "instance_id",
    "zone",
)
"""The stack outputs, the same names as the terraform template's ``outputs.tf``."""

TYPE = "dreamlake:gce:GpuVm"
"""The component's Pulumi type token."""

_PROJECT = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
_ZONE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")
_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
GPU_TYPES = (
    "nvidia-tesla-t4",
    "nvidia-tesla-v100",
    "nvidia-tesla-p4",
    "nvidia-tesla-p100",
    "nvidia-l4",
    "nvidia-tesla-a100",
    "nvidia-a100-80gb",
    "nvidia-h100-80gb",
)


class Config(BaseModel):
    """The stack's config: the decisions first, then settings with defaults.
    Validators mirror the terraform ``validation`` blocks of ``variables.tf``."""

    model_config = ConfigDict(frozen=True, extra="ignore", coerce_numbers_to_str=True)

    # Decisions: no defaults.
    project: str
    zone: str
    gpu_type: str
    # Settings with sensible defaults.
    machine_type: str = "n1-standard-8"
    ssh_user: str | None = None  # the VM's login user for connect; None: your local user name
    accelerator_count: int = 1
    name: str = "dreamlake-worker"
    image: str = (
        "projects/deeplearning-platform-release/global/images/family/common-cu124-debian-11-py310"
    )
    disk_gb: int = 100
    network: str = "default"
    spot: bool = False
    labels: dict[str, str] = {}
    # Lifecycle intent: "suspended" stops the VM (disk kept), "active" runs it.
    target_status: Literal["active", "suspended"] = "active"

    @field_validator("project")
    @classmethod
    def _project(cls, v: str) -> str:
        if not _PROJECT.match(v):
            raise ValueError(
                'The project must be a project ID (not its name or number) such as "my-gpu-project".'
            )
        return v

    @field_validator("zone")
    @classmethod
    def _zone(cls, v: str) -> str:
        if not _ZONE.match(v):
            raise ValueError('The zone must be a zone name such as "us-central1-a".')
        return v

    @field_validator("gpu_type")
    @classmethod
    def _gpu_type(cls, v: str) -> str:
        if v not in GPU_TYPES:
            raise ValueError(f"The accelerator_type must be one of {', '.join(GPU_TYPES)}.")
        return v

    @field_validator("accelerator_count")
    @classmethod
    def _accelerator_count(cls, v: int) -> int:
        if v not in (1, 2, 4, 8):
            raise ValueError("The accelerator_count must be 1, 2, 4 or 8.")
        return v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(
                "The name must be a valid instance name (lowercase letters, digits and dashes)."
            )
        return v


class GpuVmArgs(ComponentArgs):
    """The arguments of :class:`GpuVm`, in the provider SDKs' args-class style: each
    is a plain value or a ``pulumi.Input`` (e.g. ``subnetwork=subnet.id``). Plain
    values are validated as :class:`Config` validates them (a bad one raises
    :class:`ConfigError` here, before anything is declared); Outputs are taken as
    they are.

    ``project``: None (the default) uses the stack's default ``gcp`` provider (what
    ``gcp:project`` / ``gcp:zone`` in the stack config set); a project given asks for
    a provider of the component's own for it. A provider passed in ``opts`` wins.
    ``zone``: None puts the VM in the provider's zone. ``name``: the VM's name; None
    auto-names it from ``<component name>-worker``. ``subnetwork``: a subnetwork of
    yours for the VM's interface. Every other name is :class:`Config`'s.
    """

    gpu_type: pulumi.Input[str]
    project: pulumi.Input[str] | None
    zone: pulumi.Input[str] | None
    machine_type: pulumi.Input[str]
    ssh_user: pulumi.Input[str] | None
    accelerator_count: pulumi.Input[int]
    name: pulumi.Input[str] | None
    image: pulumi.Input[str]
    disk_gb: pulumi.Input[int]
    network: pulumi.Input[str]
    subnetwork: pulumi.Input[str] | None
    spot: pulumi.Input[bool]
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]]]
    target_status: pulumi.Input[str]

    config_model = Config

    def __init__(
        self,
        *,
        gpu_type: pulumi.Input[str],
        project: pulumi.Input[str] | None = None,
        zone: pulumi.Input[str] | None = None,
        machine_type: pulumi.Input[str] = "n1-standard-8",
        ssh_user: pulumi.Input[str] | None = None,
        accelerator_count: pulumi.Input[int] = 1,
        name: pulumi.Input[str] | None = None,
        image: pulumi.Input[str] = (
            "projects/deeplearning-platform-release/global/images/family/"
            "common-cu124-debian-11-py310"
        ),
        disk_gb: pulumi.Input[int] = 100,
        network: pulumi.Input[str] = "default",
        subnetwork: pulumi.Input[str] | None = None,
        spot: pulumi.Input[bool] = False,
        labels: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        target_status: pulumi.Input[str] = "active",
    ) -> None:
        given = dict(locals())
        given["labels"] = {} if labels is None else labels
        self._take(given)


@cache
def component_class() -> Any:
    """:class:`GpuVm`, defined on first use so importing this file imports neither
    ``pulumi`` nor ``pulumi_gcp``."""
    import pulumi
    import pulumi_gcp as gcp

    class GpuVm(pulumi.ComponentResource):
        """One GPU VM, every resource its child.

        ``GpuVm(name, args, opts)`` with a :class:`GpuVmArgs` (or a :class:`Config`,
        or the same names as keyword arguments). The ``gcp`` provider: one passed in
        ``opts`` (``providers=[...]`` or ``provider=``); else, when ``args.project`` is
        given, one of the component's own for it; else the stack's default provider.
        The VM is auto-named from ``<name>-worker`` unless ``args.name`` names it.
        Outputs are attributes of the same names (``worker_host``, ``instance_id``,
        ...; ``zone`` is the one the VM was put in); ``outputs`` maps them all.
        """

        def __init__(
            self,
            name: str,
            args: GpuVmArgs | Config | None = None,
            opts: pulumi.ResourceOptions | None = None,
            **kwargs: Any,
        ) -> None:
            # the cast names the type where a checker cannot resolve dreamlake.stacks
            args = cast(GpuVmArgs, GpuVmArgs.from_call(args, kwargs))
            super().__init__(TYPE, name, None, opts)
            self.args = args
            provider = given_provider(opts, "gcp")
            if provider is None and args.project is not None:
                provider = gcp.Provider(
                    f"{name}-gcp",
                    project=args.project,
                    zone=args.zone,
                    opts=pulumi.ResourceOptions(parent=self),
                )
            # None: the stack's default gcp provider (or one the parent passes down).
            self.provider = provider
            owner = args.name if args.name is not None else name
            vm = gcp.compute.Instance(
                f"{name}-worker",  # the VM's name when args.name is None: auto-named from this
                name=args.name,
                machine_type=args.machine_type,
                zone=args.zone,
                labels=lift(
                    lambda labels, o: {**labels, "dreamlake": "true", "dreamlake-provider": o},
                    args.labels,
                    owner,
                ),
                boot_disk=gcp.compute.InstanceBootDiskArgs(
                    initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                        image=args.image, size=args.disk_gb, type="pd-balanced"
                    )
                ),
                guest_accelerators=[
                    gcp.compute.InstanceGuestAcceleratorArgs(
                        type=args.gpu_type, count=args.accelerator_count
                    )
                ],
                scheduling=gcp.compute.InstanceSchedulingArgs(
                    on_host_maintenance="TERMINATE",
                    automatic_restart=lift(lambda spot: not spot, args.spot),
                    preemptible=args.spot,
                    provisioning_model=lift(lambda spot: "SPOT" if spot else "STANDARD", args.spot),
                ),
                network_interfaces=[
                    gcp.compute.InstanceNetworkInterfaceArgs(
                        network=args.network,
                        subnetwork=args.subnetwork,
                        access_configs=[gcp.compute.InstanceNetworkInterfaceAccessConfigArgs()],
                    )
                ],
                metadata={"install-nvidia-driver": "True"},
                desired_status=lift(
                    lambda s: "TERMINATED" if s == "suspended" else "RUNNING", args.target_status
                ),
                opts=pulumi.ResourceOptions(parent=self, provider=provider),
            )
            self.instance = vm
            nic = vm.network_interfaces[0]
            self.worker_host = nic.apply(
                lambda n: (n.access_configs[0].nat_ip if n.access_configs else None) or n.network_ip
            )
            self.worker_user = pulumi.Output.from_input(args.ssh_user)
            self.internal_ip = nic.network_ip
            self.instance_name = vm.name
            self.instance_id = vm.instance_id
            # What was built: the zone the VM is in (its own, or the provider's).
            self.zone = vm.zone
            self.outputs: dict[str, Any] = {k: getattr(self, k) for k in OUTPUTS}
            self.register_outputs(self.outputs)

    return GpuVm


def __getattr__(name: str) -> Any:
    if name == "GpuVm":
        return component_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def program(config: Config | GpuVmArgs, name: str = "dreamlake") -> Any:
    """The stack: one :class:`GpuVm` whose outputs become the stack outputs."""
    import pulumi

    vm = component_class()(name, config)
    for key, value in vm.outputs.items():
        pulumi.export(key, value)
    return vm


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
