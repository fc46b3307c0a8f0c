"""dreamlake.stacks — Pulumi programs, one package per vendor.

Each ``dreamlake.stacks.<vendor>`` exposes a ``pulumi.ComponentResource``
(``LocalWorker``, ``GpuWorkers``, ``GpuVm``, ``GpuCluster``) taking an args class
of ``pulumi.Input`` values (``LocalWorkerArgs``, ``GpuWorkersArgs``, ``GpuVmArgs``,
``GpuClusterArgs``: plain values validated as ``Config`` validates them), the
vendor's typed ``Config`` (a pydantic model: the template's decision keys plus
settings with defaults, validators mirroring the terraform ``validation`` blocks;
what the decision scan validates a stack file with, and accepted by the component
too), ``OUTPUTS`` (the terraform template's output names), ``program(config)`` (the
component as a whole stack, for Automation API code) and ``main()`` (reads
``Config`` with Pulumi's typed getters, then calls ``program``). Importing a vendor
package does not import ``pulumi`` or a cloud SDK.

    from dreamlake.stacks.ec2 import GpuWorkers, GpuWorkersArgs
"""

from collections.abc import Callable
from typing import Any

VENDORS = ("local", "ec2", "gce", "kube")

EXTRAS = {
    "local": "pulumi",
    "ec2": "pulumi-clouds",
    "gce": "pulumi-clouds",
    "kube": "pulumi-clouds",
}
"""The extra that installs what each vendor's component is built with: the Pulumi
SDK for ``local`` (``pulumi``), the SDK and the cloud's provider SDK for the others
(``pulumi-clouds``)."""


def component(vendor: str, name: str, build: Callable[[], Any]) -> Any:
    """``build()`` (a vendor's ``component_class``); a missing Pulumi SDK says which
    extra installs it (still a ``ModuleNotFoundError``, naming the module)."""
    try:
        return build()
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing.split(".")[0] not in ("pulumi", "pulumi_aws", "pulumi_gcp", "pulumi_kubernetes"):
            raise
        line = f"pip install 'dreamlake[{EXTRAS[vendor]}]'"
        raise ModuleNotFoundError(
            f"{name} is built with the Pulumi SDK"
            + ("" if vendor == "local" else " and the cloud's provider SDK")
            + f"; {missing} is not installed here: {line}",
            name=missing,
        ) from None


__all__ = ["EXTRAS", "VENDORS", "component"]
