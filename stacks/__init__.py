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

VENDORS = ("local", "ec2", "gce", "kube")

__all__ = ["VENDORS"]
