"""``dreamlake provider resume``: set the target to ``active``, then reconcile.

The daemon starts again under the same supervisor with the same instance id (or the
machines start again); a state that did not survive is ``error`` with a recovery
next action. A vendor without the stateful lifecycle provisions afresh (gated).
"""

from __future__ import annotations

from pathlib import Path

from ..backends.base import Progress
from ..contract.result import ProviderLifecycleResult
from ..lifecycle.actual import ShellFactory
from .reconcile import run


def resume(
    name: str,
    *,
    yes: bool = False,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    progress: Progress | None = None,
    shell_factory: ShellFactory | None = None,
    watch: float | None = None,
) -> ProviderLifecycleResult:
    """Resume provider ``name`` (``watch``: seconds to wait for its claim)."""
    return run(
        name,
        "active",
        "resume",
        yes=yes,
        dream_dir=dream_dir,
        cwd=cwd,
        progress=progress,
        shell_factory=shell_factory,
        watch=watch,
        drain_timeout=None,
    )


__all__ = ["resume"]
