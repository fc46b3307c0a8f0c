"""What every verb shares: resolving the root and turning typed errors into results."""

from __future__ import annotations

from pathlib import Path

from ..contract import commands
from ..contract.errors import DreamlakeError
from ..contract.result import EditThenContinue, ProviderLifecycleResult, Run, Shell
from ..world import lakeshore
from ..world.paths import NAME_RE, Root, find_root


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
    """The one failure shape. It always carries a nextAction an agent can follow.

    A name that is not a valid provider name is never put into a command (it would
    be run as given: the same error again at best, a shell's ``;`` at worst)."""
    cp = lakeshore.resolve_control_plane(root.path if root else None, strict=False)
    valid = NAME_RE.fullmatch(name or "") is not None
    if valid:
        fallback = Run(command=commands.status(name, dream_dir))
        bad_file = getattr(exc, "path", None)
        if exc.next_action is None and bad_file is not None:  # a file to fix, then look again
            default_next = EditThenContinue(file=str(bad_file), command=fallback.command)
    else:
        # No name to keep, and never another provider's: the help, which says what a
        # name may be.
        fallback = Run(command=commands.create_help(None, dream_dir))
        default_next = None
    nxt = exc.next_action or default_next or fallback
    return ProviderLifecycleResult(
        status="error",
        provider=name,
        vendor=vendor,
        server=cp.url,
        namespace=cp.namespace,
        dir=str(root.provider_dir(name)) if root and valid else None,
        next_action=nxt,
        error=exc.message,
        kind=exc.kind,
        root=str(root.path) if root else None,
    )
