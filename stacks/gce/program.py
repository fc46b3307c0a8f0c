"""The `gce` Pulumi program: one GPU VM in a Google Cloud project you already have.

The :class:`GpuVm` component mirrors ``templates/gce/terraform``: a Compute Engine
instance with a GPU, an ephemeral public IP and the NVIDIA driver installed. Its
``desired_status`` follows ``target_status``: ``TERMINATED`` (stopped, the disk
kept) when ``suspended``, else ``RUNNING``. ``pulumi_gcp`` is imported when the
component is built (it is in the ``pulumi-clouds`` extra), so the config model
loads without it.

This file is self-contained (``pydantic`` plus, when run, ``pulumi`` and
``pulumi_gcp``) so a scaffolded copy is yours to edit. One code path, three ways
in: ``GpuVm(name, Config(...), opts)`` inside your own program; ``program(Config(...))``
inline from Automation API code (what ``dreamlake provider plan/apply`` run);
``pulumi up`` in a project whose ``__main__.py`` is this file (:func:`main` reads
:class:`Config` from the stack config, e.g. ``dreamlake:zone``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any, Literal, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

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


def given_provider(opts: Any, package: str) -> Any:
    """The ``package`` provider the caller passed in ``opts`` (``provider=`` or
    ``providers=``), else None: the component then makes its own."""
    if opts is None:
        return None
    if getattr(opts.provider, "package", None) == package:
        return opts.provider
    provs = opts.providers
    if isinstance(provs, Mapping):
        return provs.get(package)
    return next((p for p in provs or [] if getattr(p, "package", None) == package), None)


@cache
def component_class() -> Any:
    """:class:`GpuVm`, defined on first use so importing this file imports neither
    ``pulumi`` nor ``pulumi_gcp``."""
    import pulumi
    import pulumi_gcp as gcp

    class GpuVm(pulumi.ComponentResource):
        """One GPU VM, every resource its child.

        ``GpuVm(name, config, opts)``. Pass a ``gcp`` provider in ``opts``
        (``providers=[...]``) to use yours; otherwise one is made for
        ``config.project`` / ``config.zone``. Outputs are attributes of the same
        names (``worker_host``, ``instance_id``, ...); ``outputs`` maps them all.
        """

        def __init__(
            self, name: str, config: Config, opts: pulumi.ResourceOptions | None = None
        ) -> None:
            super().__init__(TYPE, name, None, opts)
            self.config = config
            provider = given_provider(opts, "gcp")
            if provider is None:
                provider = gcp.Provider(
                    f"{name}-gcp",
                    project=config.project,
                    zone=config.zone,
                    opts=pulumi.ResourceOptions(parent=self),
                )
            suspended = config.target_status == "suspended"
            vm = gcp.compute.Instance(
                f"{name}-worker",
                name=config.name,
                machine_type=config.machine_type,
                zone=config.zone,
                labels={**config.labels, "dreamlake": "true", "dreamlake-provider": config.name},
                boot_disk=gcp.compute.InstanceBootDiskArgs(
                    initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                        image=config.image, size=config.disk_gb, type="pd-balanced"
                    )
                ),
                guest_accelerators=[
                    gcp.compute.InstanceGuestAcceleratorArgs(
                        type=config.gpu_type, count=config.accelerator_count
                    )
                ],
                scheduling=gcp.compute.InstanceSchedulingArgs(
                    on_host_maintenance="TERMINATE",
                    automatic_restart=not config.spot,
                    preemptible=config.spot,
                    provisioning_model="SPOT" if config.spot else "STANDARD",
                ),
                network_interfaces=[
                    gcp.compute.InstanceNetworkInterfaceArgs(
                        network=config.network,
                        access_configs=[gcp.compute.InstanceNetworkInterfaceAccessConfigArgs()],
                    )
                ],
                metadata={"install-nvidia-driver": "True"},
                desired_status="TERMINATED" if suspended else "RUNNING",
                opts=pulumi.ResourceOptions(parent=self, provider=provider),
            )
            self.instance = vm
            nic = vm.network_interfaces[0]
            self.worker_host = nic.apply(
                lambda n: (n.access_configs[0].nat_ip if n.access_configs else None) or n.network_ip
            )
            self.worker_user = pulumi.Output.from_input(config.ssh_user)
            self.internal_ip = nic.network_ip
            self.instance_name = vm.name
            self.instance_id = vm.instance_id
            self.zone = pulumi.Output.from_input(config.zone)
            self.outputs: dict[str, Any] = {k: getattr(self, k) for k in OUTPUTS}
            self.register_outputs(self.outputs)

    return GpuVm


def __getattr__(name: str) -> Any:
    if name == "GpuVm":
        return component_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def program(config: Config, name: str = "dreamlake") -> Any:
    """The stack: one :class:`GpuVm` whose outputs become the stack outputs."""
    import pulumi

    vm = component_class()(name, config)
    for key, value in vm.outputs.items():
        pulumi.export(key, value)
    return vm


class ConfigError(Exception):
    """The stack config does not satisfy :class:`Config`. One line per key:
    ``dreamlake config: <key>: <what is wrong>``."""


def load_config(values: dict[str, Any]) -> Config:
    """Validate raw config values; raise :class:`ConfigError` naming each key."""
    try:
        return Config.model_validate(values)
    except ValidationError as exc:
        raise ConfigError("\n".join(_error_lines(exc))) from None


def _error_lines(exc: ValidationError) -> list[str]:
    lines = []
    for err in exc.errors():
        msg = "not set" if err["type"] == "missing" else str(err["msg"])
        msg = msg.removeprefix("Value error, ")
        if err["loc"]:
            keys = [".".join(str(p) for p in err["loc"])]
        else:  # a cross-field conflict names its keys
            keys = [str(k) for k in (err.get("ctx") or {}).get("keys") or ["(config)"]]
        lines += [f"dreamlake config: {key}: {msg}" for key in keys]
    return lines


def _getter(cfg: Any, annotation: Any) -> Any:
    """Pulumi's typed getter for a field of :class:`Config`."""
    if annotation is bool:
        return cfg.get_bool
    if annotation is int:
        return cfg.get_int
    if annotation is float:
        return cfg.get_float
    if get_origin(annotation) in (list, dict):
        return cfg.get_object
    return cfg.get


def read_pulumi_config() -> Config:
    """Read every field of :class:`Config` from the running stack's config with
    Pulumi's typed getters (``get_int``, ``get_float``, ``get_bool``,
    ``get_object``, ``get``); a value of the wrong type is reported like any
    other invalid value."""
    import pulumi

    cfg = pulumi.Config()
    values: dict[str, Any] = {}
    lines: list[str] = []
    mistyped: set[str] = set()
    for name, field in Config.model_fields.items():
        try:
            value = _getter(cfg, field.annotation)(name)
        except (pulumi.ConfigTypeError, ValueError) as exc:
            lines.append(f"dreamlake config: {name}: {exc}")
            mistyped.add(name)
            continue
        if value is not None:
            values[name] = value
    try:
        config = Config.model_validate(values)
    except ValidationError as exc:
        lines += [line for line in _error_lines(exc) if line.split(": ")[1] not in mistyped]
        raise ConfigError("\n".join(lines)) from None
    if lines:
        raise ConfigError("\n".join(lines))
    return config


def main() -> None:
    program(read_pulumi_config())


if __name__ == "__main__":
    main()
