"""``dreamlake.stacks.ec2``: the EC2 Pulumi program, its component and config model.

    from dreamlake.stacks.ec2 import GpuWorkers, GpuWorkersArgs
    GpuWorkers("gpu", GpuWorkersArgs(subnet=subnet.id, instance_type=..., ami=...))

``GpuWorkers`` and ``program`` need ``pulumi_aws`` (the ``pulumi-clouds`` extra);
``Config`` and ``GpuWorkersArgs`` do not, and ``GpuWorkers`` is built on first access.
"""

from typing import Any

from .program import (
    DECISIONS,
    OUTPUTS,
    Config,
    ConfigError,
    GpuWorkersArgs,
    component_class,
    load_config,
    main,
    program,
    read_pulumi_config,
)


def __getattr__(name: str) -> Any:
    if name == "GpuWorkers":
        from .. import component

        return component("ec2", name, component_class)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DECISIONS",
    "OUTPUTS",
    "Config",
    "ConfigError",
    "GpuWorkers",
    "GpuWorkersArgs",
    "component_class",
    "load_config",
    "main",
    "program",
    "read_pulumi_config",
]
