"""``dreamlake provider delete``: remove a provider — its folder and its row.

The only verb that removes user files, so it is careful:

* it refuses while infrastructure exists or a daemon claims the provider (``error``,
  kind ``infrastructure_exists``; the next action is ``destroy``);
* without ``--yes`` it asks through ``confirm`` (the CLI passes one on a terminal);
  with no way to ask (an agent, a pipe) it cancels and returns 0: nothing removed,
  the next action the same command with ``--yes``, flagged ``approval``;
* the folder is first renamed aside in one step (``.dream/.deleting/…``), then
  removed: an interrupted delete leaves either the whole provider or none of it;
* the provider's row in the control plane is soft-deleted (when it is this
  provider's, or a row without an identity of that name).

A name with no folder but a row is a row: it is soft-deleted the same way (the
row CRUD's ``delete``); a name with neither is ``unknown_provider``. A finished
delete answers ``exists`` with ``files: []`` (the step is done; nothing was
written) and the next action ``list``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from ..contract import commands
from ..contract.errors import DreamlakeError
from ..contract.result import ProviderLifecycleResult, Run
from ..world import lakeshore
from ..world.derive import Derived, Observation, article, step_action
from ..world.observe import observe, to_result, unknown_provider
from ..world.paths import Root, check_name
from ._common import error_result, root_for

Confirm = Callable[[str], bool]
ASIDE = ".deleting"


def delete(
    name: str,
    *,
    yes: bool = False,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    confirm: Confirm | None = None,
) -> ProviderLifecycleResult:
    root = root_for(dream_dir, cwd)
    try:
        check_name(name)
        obs = observe(name, root, dream_dir, probe=False, require=False)
        if obs.record is None:
            return _row_only(obs, root, yes, confirm)
        return _delete(obs, root, yes, confirm)
    except DreamlakeError as exc:
        return error_result(exc, name, root=root, dream_dir=dream_dir)


def _cancelled(obs: Observation, what: str) -> ProviderLifecycleResult:
    nxt = step_action(obs, "delete")
    res = to_result(obs, Derived("needs_input", nxt, ()), files=[])
    return res.with_headline(f"⚠ delete cancelled — nothing was removed ({what})").with_notes(
        "deleting removes the provider's folder and its row; re-run with --yes to do it."
    )


def _ask(obs: Observation, yes: bool, confirm: Confirm | None, question: str) -> str | None:
    """None: go ahead; else why the delete was cancelled."""
    if yes:
        return None
    if confirm is None:
        return "no --yes, and no terminal to ask on"
    return None if confirm(question) else "you answered no"


def _infrastructure(obs: Observation) -> str | None:
    infra = obs.infra
    live = obs.claims.live if obs.claims else 0
    intent = obs.intent
    if intent is not None and not intent.finished and intent.verb != "connect":
        state = "is in flight" if intent.in_flight else "was interrupted"
        return f"{article(intent.verb)} {state}"
    if infra is not None and infra.lock is not None:
        return "an apply holds or left a lock on its state"
    if infra is not None and (infra.present or infra.failed_apply is not None):
        n = infra.resources
        return f"its infrastructure exists ({n} resource{'s' if n != 1 else ''} in state)"
    if live:
        return f"{live} live worker{'s' if live != 1 else ''} claim{'s' if live == 1 else ''} it"
    return None


def _delete(
    obs: Observation, root: Root, yes: bool, confirm: Confirm | None
) -> ProviderLifecycleResult:
    from ..world import rows

    name, dd = obs.name, obs.dream_dir
    why = _infrastructure(obs)
    if why:
        # A deliberate no, not a failure of the tool: exit 0, and the way forward.
        res = to_result(
            obs,
            Derived("needs_input", Run(command=_destroy(name, dd)), ()),
            files=[],
            kind="infrastructure_exists",
            root=str(root.path),
        )
        return res.with_headline(f"⚠ delete refused — {why}; nothing was removed").with_notes(
            "destroy it first: delete keeps nothing, so it never leaves infrastructure "
            "behind without its code."
        )
    cancelled = _ask(obs, yes, confirm, f"Delete provider '{name}' and its folder {obs.dir}?")
    if cancelled:
        return _cancelled(obs, cancelled)
    assert obs.record is not None
    ident = obs.record.identity(obs.dir)
    aside = _move_aside(root, obs.dir)
    shutil.rmtree(aside, ignore_errors=True)
    _drop_empty(aside.parent)
    notes = [f"✓ removed {obs.dir}"]
    cp = lakeshore.resolve_control_plane(root.path)
    note = rows.remove(cp, name, ident)
    if note:
        notes.append(note)
    if revoked := lakeshore.revoke_daemon_tokens(cp, name):  # no ghost worker after
        notes.append(revoked)
    return _gone(obs, notes, f"✓ deleted '{name}'")


def _destroy(name: str, dd: str | None) -> str:
    return commands.destroy_yes(name, dd).replace(" --yes", "", 1)


def _move_aside(root: Root, pdir: Path) -> Path:
    """One rename: the provider is gone from ``providers/`` whole, or still there."""
    base = root.dream / ASIDE
    base.mkdir(parents=True, exist_ok=True)
    aside = base / f"{pdir.name}-{uuid.uuid4().hex[:8]}"
    try:
        os.rename(pdir, aside)
    except OSError as exc:
        raise DreamlakeError(
            f"cannot move {pdir} aside to delete it: {exc.strerror or exc}; nothing was removed",
            kind="not_writable",
        ) from exc
    return aside


def _drop_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()


def _gone(obs: Observation, notes: list[str], headline: str) -> ProviderLifecycleResult:
    res = to_result(
        Observation(
            obs.name,
            obs.dir,
            obs.dream_dir,
            None,
            None,
            degraded=obs.degraded,
            server=obs.server,
            namespace=obs.namespace,
        ),
        Derived("exists", Run(command=commands.list_(obs.dream_dir)), ()),
        files=[],
    )
    return res.with_headline(headline).with_notes(*notes)


def _row_only(
    obs: Observation, root: Root, yes: bool, confirm: Confirm | None
) -> ProviderLifecycleResult:
    """No folder of that name: a row of that name is deleted (soft), else unknown."""
    from ..world.rows import fetch_row

    cp = lakeshore.resolve_control_plane(root.path)
    row = fetch_row(cp, obs.name)
    if row is None:
        raise unknown_provider(obs.name, root, obs.dream_dir)
    cancelled = _ask(obs, yes, confirm, f"Delete provider row '{obs.name}' ({row['launcher']})?")
    if cancelled:
        return _cancelled(obs, cancelled)
    from ..world import rows

    note = rows.remove(cp, obs.name, str(row.get("identity") or ""))
    notes = [note] if note else []
    if revoked := lakeshore.revoke_daemon_tokens(cp, obs.name):
        notes.append(revoked)
    return _gone(obs, notes, f"✓ deleted provider row '{obs.name}'")


__all__ = ["delete"]
