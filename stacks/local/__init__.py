"""``dreamlake.stacks.local``: the local Pulumi program, its component and config model.

    from dreamlake.stacks.local import LocalWorker, LocalWorkerArgs
    LocalWorker("lab", LocalWorkerArgs(workdir="/var/lib/nymph", queues=["default"], worker_name="lab-box"))

``LocalWorker`` is built on first access, so importing this package does not
import ``pulumi``.
"""

from typing import Any

from .program import (
    DECISIONS,
    OUTPUTS,
    Config,
    ConfigError,
    LocalWorkerArgs,
    component_class,
    daemon_args,
    load_config,
    main,
    program,
    read_pulumi_config,
)


def __getattr__(name: str) -> Any:
    if name == "LocalWorker":
        from .. import component

        return component("local", name, component_class)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DECISIONS",
    "OUTPUTS",
    "Config",
    "ConfigError",
    "LocalWorker",
    "LocalWorkerArgs",
    "component_class",
    "daemon_args",
    "load_config",
    "main",
    "program",
    "read_pulumi_config",
]
