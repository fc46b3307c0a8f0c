"""What holds a Pulumi stack and what clears it: a stack lock (held by a live
update, or left by an interrupted one), pending operations an interrupted update
left in the state, and a stack a shared backend keeps under the provider's bare
name from before stacks carried its identity."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...contract.result import LockInfo
from .project import BACKUPS, PulumiProject
from .runtime import cli_command
from .state import LockFile


def lock_info(
    lock: LockFile,
    project: PulumiProject,
    environ: Mapping[str, str] | None,
    *,
    refresh: bool = True,
) -> LockInfo:
    who = f"{lock.username}@{lock.hostname or '?'}" + (f" (pid {lock.pid})" if lock.pid else "")
    if lock.held:
        detail = (
            f"pulumi holds the stack lock: an update, refresh or destroy is in flight ({lock.detail}). "
            "Wait for it to end, then re-run; if that process is gone, "
            f"`{cli_command(project, 'cancel --yes', environ)}` removes the lock."
        )
    elif project.adopted:  # plan refuses an adopted stack: only the team's own hands clear it
        detail = (
            f"a stack lock was left by an interrupted update ({lock.detail}). The stack is "
            "managed where its program lives; there: "
            f"`{cli_command(project, 'cancel --yes', environ)}`"
            + (f", then `{cli_command(project, 'refresh --yes', environ)}`." if refresh else ".")
        )
    else:
        detail = (
            f"a stack lock was left by an interrupted update ({lock.detail}). "
            f"`dreamlake provider plan -n {project.config_name}` removes it (after exporting the "
            f"state to {BACKUPS}/) and previews again; by hand: "
            f"`{cli_command(project, 'cancel --yes', environ)}`"
            + (
                f", then `{cli_command(project, 'refresh --yes', environ)}` reconciles the "
                "state with the cloud before planning again."
                if refresh
                else "."
            )
        )
    return LockInfo(
        state="held" if lock.held else "stale",
        path=str(lock.path),
        who=who,
        since=lock.timestamp,
        operation="update",
        detail=detail,
    )


def pending_info(
    ops: list[dict[str, Any]],
    path: Path,
    since: str | None,
    project: PulumiProject,
    environ: Mapping[str, str] | None,
) -> LockInfo:
    kinds = [str(o.get("type", "?")) for o in ops]
    listed = "; ".join(
        f"{(o.get('resource') or {}).get('urn', '?')} interrupted while {o.get('type', '?')}"
        for o in ops[:5]
    ) + ("; …" if len(ops) > 5 else "")
    if "creating" in kinds:
        fix = (
            f"Check in the cloud account whether those resources exist, then "
            f"`{cli_command(project, 'refresh --yes --clear-pending-creates', environ)}` clears "
            "them (or `--import-pending-creates <urn> <id>` to keep one that was created)."
        )
    elif project.adopted:
        fix = (
            "The stack is managed where its program lives; there: "
            f"`{cli_command(project, 'refresh --yes', environ)}`."
        )
    else:
        fix = (
            f"`dreamlake provider plan -n {project.config_name}` reconciles and clears them "
            f"(pulumi refresh, after exporting the state to {BACKUPS}/); by hand: "
            f"`{cli_command(project, 'refresh --yes', environ)}`."
        )
    return LockInfo(
        state="stale",
        path=str(path),
        since=since,
        operation=",".join(dict.fromkeys(kinds)),
        detail=f"an update was interrupted with {len(ops)} pending operation(s): {listed}. {fix} "
        "Re-running apply does not recover it.",
    )


def legacy_note(root: Path, project: PulumiProject) -> list[str]:
    """A shared backend holding a stack under the provider's bare name (from before
    stacks carried its identity) while this provider's own stack is absent."""
    if project.adopted or project.stack == project.config_name:
        return []
    base = root / ".pulumi" / "stacks"
    own = [
        base / project.stack_project / f"{project.stack_short}{x}" for x in (".json", ".json.gz")
    ]
    old = [
        p / f"{project.config_name}{x}"
        for p in (base / project.stack_project, base)
        for x in (".json", ".json.gz", ".json.zst")
    ]
    if any(p.exists() for p in own) or not any(p.exists() for p in old):
        return []
    # the rename runs on the old stack: the command line names it, not the new one
    rename = cli_command(project, f"stack rename {project.stack}", None).replace(
        f" --stack {project.stack}", f" --stack {project.config_name}"
    )
    return [
        f"this backend holds a stack named '{project.config_name}' from before stacks carried "
        f"the provider's identity; this provider's stack is '{project.stack}'. If that one is "
        f"this provider's, rename it (`{rename}`) or name it in provider.json "
        "settings.pulumi.stack (docs/pulumi.md, migration)"
    ]


__all__ = ["legacy_note", "lock_info", "pending_info"]
