"""The `gce` Pulumi program: one GPU VM in a Google Cloud project you already have.

It mirrors ``templates/gce/terraform``: a Compute Engine instance with a GPU, an
ephemeral public IP and the NVIDIA driver installed. ``pulumi_gcp`` is imported
inside :func:`program` (it is in the ``pulumi-clouds`` extra), so the config model
loads without it.

This file is self-contained (``pydantic`` plus, when run, ``pulumi`` and
``pulumi_gcp``) so a scaffolded copy is yours to edit. Configuration is read from
the stack's config in the project's namespace, e.g. ``dreamlake:zone``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

DECISIONS: tuple[str, ...] = ("project", "zone", "gpu_type")
"""Config keys that are decisions (TEMPLATE.json ``decisions[].key``), in order."""

_TEXT = (str, str | None)
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


def program(config: Config) -> None:
    """Declare the GPU VM."""
    import pulumi
    import pulumi_gcp as gcp

    provider = gcp.Provider("gcp", project=config.project, zone=config.zone)
    vm = gcp.compute.Instance(
        "worker",
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
        opts=pulumi.ResourceOptions(provider=provider),
    )
    nic = vm.network_interfaces[0]
    pulumi.export(
        "worker_host",
        nic.apply(
            lambda n: (n.access_configs[0].nat_ip if n.access_configs else None) or n.network_ip
        ),
    )
    pulumi.export("internal_ip", nic.network_ip)
    pulumi.export("worker_user", config.ssh_user)
    pulumi.export("instance_name", vm.name)
    pulumi.export("instance_id", vm.instance_id)
    pulumi.export("zone", config.zone)


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
