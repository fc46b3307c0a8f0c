"""What every verb shares: resolving the root and turning typed errors into results."""

from __future__ import annotations

from pathlib import Path

from .. import commands, lakeshore
from ..contract import EditThenContinue, ProviderLifecycleResult, Run, Shell
from ..errors import DreamlakeError
from ..paths import Root, find_root


def root_for(dream_dir: str | Path | None, cwd: Path | None) -> Root:
    return find_root(dream_dir, cwd=cwd)


def error_result(
    exc: DreamlakeError,
    name: str,
    *,
    root: Root | None = None,
    vendor: str | None = None,
    dream_dir: str | None = None,
    default_next: EditThenContinue | Run | Shell | None = None,
) -> ProviderLifecycleResult:
    """The one failure shape. It always carries a nextAction an agent can follow."""
    cp = lakeshore.resolve_control_plane(root.path if root else None)
    nxt = exc.next_action or default_next or Run(command=commands.status(name, dream_dir))
    return ProviderLifecycleResult(
        status="error",
        provider=name,
        vendor=vendor,
        server=cp.url,
        namespace=cp.namespace,
        dir=str(root.provider_dir(name)) if root and name else None,
        next_action=nxt,
        error=exc.message,
        kind=exc.kind,
        root=str(root.path) if root else None,
    )
