"""``dreamlake provider suspend``: set the target to ``suspended``, then reconcile.

A vendor with the stateful lifecycle stops with its state kept (the daemon drains
and stops, or the machines stop with their disks); one without it is destroyed
(gated: it needs ``--yes``). See :mod:`.reconcile` for the steps.
"""

from __future__ import annotations

from pathlib import Path

from ..backends.base import Progress
from ..contract.result import ProviderLifecycleResult
from ..lifecycle.actual import ShellFactory
from .reconcile import run


def suspend(
    name: str,
    *,
    yes: bool = False,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    progress: Progress | None = None,
    shell_factory: ShellFactory | None = None,
    drain_timeout: float | None = None,
) -> ProviderLifecycleResult:
    """Suspend provider ``name`` (``drain_timeout``: how long a running item may take)."""
    return run(
        name,
        "suspended",
        "suspend",
        yes=yes,
        dream_dir=dream_dir,
        cwd=cwd,
        progress=progress,
        shell_factory=shell_factory,
        watch=None,
        drain_timeout=drain_timeout,
    )


__all__ = ["suspend"]
