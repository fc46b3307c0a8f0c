"""``dreamlake.stacks.kube``: the EKS Pulumi program, its component and config model.

    from dreamlake.stacks.kube import GpuCluster, GpuClusterArgs
    GpuCluster("gpu", GpuClusterArgs(vpc_id=vpc.id, node_type=["g5.xlarge"]))

``GpuCluster`` and ``program`` need ``pulumi_aws`` and ``pulumi_kubernetes`` (the
``pulumi-clouds`` extra); ``Config`` and ``GpuClusterArgs`` do not, and
``GpuCluster`` is built on first access.
"""

from typing import Any

from .config import DECISIONS, Config, ConfigError, GpuClusterArgs, load_config
from .program import OUTPUTS, component_class, main, program, read_pulumi_config


def __getattr__(name: str) -> Any:
    if name == "GpuCluster":
        from .. import component

        return component("kube", name, component_class)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DECISIONS",
    "OUTPUTS",
    "Config",
    "ConfigError",
    "GpuCluster",
    "GpuClusterArgs",
    "component_class",
    "load_config",
    "main",
    "program",
    "read_pulumi_config",
]
