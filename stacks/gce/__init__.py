"""``dreamlake.stacks.gce``: the GCE Pulumi program, its component and config model.

    from dreamlake.stacks.gce import GpuVm, GpuVmArgs
    GpuVm("gpu", GpuVmArgs(gpu_type="nvidia-l4", subnetwork=subnet.id))

``GpuVm`` and ``program`` need ``pulumi_gcp`` (the ``pulumi-clouds`` extra);
``Config`` and ``GpuVmArgs`` do not, and ``GpuVm`` is built on first access.
"""

from typing import Any

from .program import (
    DECISIONS,
    OUTPUTS,
    Config,
    ConfigError,
    GpuVmArgs,
    component_class,
    load_config,
    main,
    program,
    read_pulumi_config,
)


def __getattr__(name: str) -> Any:
    if name == "GpuVm":
        from .. import component

        return component("gce", name, component_class)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DECISIONS",
    "OUTPUTS",
    "Config",
    "ConfigError",
    "GpuVm",
    "GpuVmArgs",
    "component_class",
    "load_config",
    "main",
    "program",
    "read_pulumi_config",
]
