"""Server-side launchers: one module per launcher kind, each holding its SDK client
(imported lazily, inside the call) and these functions::

    launch(order)              -> {"instances": [{"id", "state", ...}], ...}
    describe(order, ids)       -> {id: state}        live state from the cloud
    terminate(order, ids)      -> None               idempotent
    suspend(order, ids)        -> None               optional: the stateful lifecycle

``order`` is a :class:`~.order.LaunchOrder` (a ``LaunchSpec`` with the count, the
client token and, for ``daemon`` dispatch, what an instance needs to fetch and start
``nymph``). Its kwargs carry decrypted secrets: a launcher never logs them, and what
it returns or raises is scrubbed before it leaves the server.

    EC2    boto3 (the ``aws`` extra)                  verified against moto's server
    GCE    google-cloud-compute (the ``gcp`` extra)   verified against a recorded-HTTP double
    Kube   kubernetes (the ``kube`` extra)            verified against an in-process apiserver double
    SLURM  sbatch/squeue/scancel over SSH (fabric)    verified against a real slurmctld/slurmd
    SSH    the engine's install + supervise code      verified against a real sshd
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from .order import LaunchOrder


class LauncherModule(Protocol):
    """What every launcher module provides (``suspend``/``resume`` are optional)."""

    def launch(self, order: LaunchOrder) -> Mapping[str, Any]: ...

    def describe(self, order: LaunchOrder, ids: Sequence[str]) -> Mapping[str, Any]: ...

    def terminate(self, order: LaunchOrder, ids: Sequence[str]) -> None: ...


MODULES: dict[str, str] = {
    "EC2": "dreamlake.controlplane.launchers.ec2",
    "GCE": "dreamlake.controlplane.launchers.gce",
    "Kube": "dreamlake.controlplane.launchers.kube",
    "SLURM": "dreamlake.controlplane.launchers.slurm",
    "SSH": "dreamlake.controlplane.launchers.ssh",
}

EXTRAS: dict[str, str] = {"EC2": "aws", "GCE": "gcp", "Kube": "kube"}


class LauncherUnavailable(Exception):
    """This server cannot launch ``kind``: its SDK is not installed."""

    def __init__(self, kind: str, why: str) -> None:
        extra = EXTRAS.get(kind)
        hint = f" (pip install 'dreamlake[{extra}]' where lakeshore serve runs)" if extra else ""
        super().__init__(f"no {kind} launcher is installed on this control plane: {why}{hint}")
        self.kind = kind


def load(kind: str) -> LauncherModule:
    """The launcher module for ``kind``; its SDK must import."""
    name = MODULES.get(kind)
    if name is None:
        raise LauncherUnavailable(kind, "unknown launcher kind")
    module = importlib.import_module(name)
    check = getattr(module, "available", None)
    if check is not None:
        why = check()
        if why:
            raise LauncherUnavailable(kind, why)
    return cast(LauncherModule, module)
