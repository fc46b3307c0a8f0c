"""``dreamlake provider destroy``: take the daemon down, then the infrastructure.

Without ``--yes`` nothing is touched: a real destroy plan says what would go
(``plan`` counts), the status is ``needs_input`` and the next action is the same
command with ``--yes``, flagged ``approval`` (a person says yes to destroying).

With ``--yes``, in this order:

1. stop and deregister the daemon under whichever supervisor runs it
   (:func:`..daemonctl.stop_daemon`); for an adopted (``ssh``) provider or the
   ``local`` vendor it is removed from the host too, the host itself left alone;
2. destroy the infrastructure through the provider's backend (terraform: a saved
   destroy plan, applied);
3. look again: the scaffold and the decisions are kept, the state is empty, so the
   status is derived (``scaffolded``, next ``plan``) — never a stored phase.

A held lock → ``applying`` (re-run when it is free); a failed destroy → ``error``
whose recovery is ``plan``; a backend without destroy → ``error`` saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..backends.base import Progress
from ..contract import commands
from ..contract.errors import DreamlakeError
from ..contract.result import LockInfo, PlanCounts, ProviderLifecycleResult, Run
from ..settings.records import replace
from ..world.derive import Derived, Observation, derive, step_action
from ..world.observe import observe, to_result
from ..world.paths import Root, check_name
from ._common import error_result, root_for
from .plan import failure

ShellFactory = Callable[[Any], Any]


def destroy(
    name: str,
    *,
    yes: bool = False,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    progress: Progress | None = None,
    shell_factory: ShellFactory | None = None,
) -> ProviderLifecycleResult:
    root = root_for(dream_dir, cwd)
    try:
        check_name(name)
        obs = observe(name, root, dream_dir, probe=False)
    except DreamlakeError as exc:
        return error_result(exc, name, root=root, dream_dir=dream_dir)
    try:
        return _destroy(obs, root, yes, progress, shell_factory)
    except DreamlakeError as exc:
        if exc.kind == "not_supported":
            return to_result(
                obs,
                Derived("error", None, ()),
                next_action=Run(command=commands.status(name, dream_dir)),
                error=exc.message,
                kind=exc.kind,
                root=str(root.path),
            )
        return failure(obs, root, exc)


def _again(obs: Observation) -> Run:
    return step_action(obs, "destroy")


def _applying(obs: Observation, lock: LockInfo | None = None) -> ProviderLifecycleResult:
    """The one ``applying`` answer (:mod:`._busy`); nothing was destroyed."""
    from ._busy import busy, with_lock

    return busy(with_lock(obs, lock) if lock is not None else obs, "destroy").with_notes(
        "nothing was destroyed."
    )


def _preview(
    obs: Observation, counts: PlanCounts | None, what: str, daemon: str | None
) -> ProviderLifecycleResult:
    res = to_result(obs, Derived("needs_input", _again(obs), ()), files=[], plan=counts)
    notes = [
        f"destroying is permanent: re-run with --yes to {daemon + ' and ' if daemon else ''}{what}."
    ]
    notes.append("the scaffold and the decisions are kept: plan + apply bring it back.")
    return res.with_headline(f"⚠ destroy would {what} — nothing was destroyed").with_notes(*notes)


def _daemon_words(obs: Observation) -> str | None:
    from ..daemon.stop import daemon_target

    live = obs.claims.live if obs.claims else 0
    where = daemon_target(obs)
    if where is None and not live:
        return None
    host = "this machine" if where and where[0] else (where[1].label if where else "its host")
    if obs.adopt or (where and where[0]):
        return f"stop the daemon on {host} and remove it from there"
    return f"stop the daemon on {host}" if live else None


def _destroy(
    obs: Observation,
    root: Root,
    yes: bool,
    progress: Progress | None,
    shell_factory: ShellFactory | None,
) -> ProviderLifecycleResult:
    from ..daemon.stop import stop_daemon
    from ..world.intent import recording
    from ._busy import may_act

    name, dd = obs.name, obs.dream_dir
    infra = obs.infra
    if not may_act(obs, "destroy"):
        return _applying(obs)
    daemon = _daemon_words(obs)
    local_install = obs.adopt or (obs.record is not None and obs.record.vendor == "local")
    over = _over(obs) if yes else []

    if obs.adopt:
        if not yes:
            what = f"{daemon or 'stop the daemon'} (the host itself is left alone)"
            return _preview(obs, None, what, None)
        with recording(obs.dir, "destroy", yes=True, step="deprovision") as rec:
            stop = stop_daemon(obs, remove=True, shell_factory=shell_factory, progress=progress)
            # The workers it registered still count as gone in the control plane: the
            # record says the daemon was taken down on purpose, nothing kept.
            rec.finish("destroyed")
        files = _forget_host(obs) if stop.reached else []
        return _after(obs, root, None, files, [*over, *stop.notes], "✓ the daemon was taken down")

    # A lock left on the state counts: destroying (terraform takes the lock over) is
    # what finishes an interrupted destroy, even one that removed everything.
    present = infra is not None and (
        infra.present or infra.failed_apply is not None or infra.lock is not None
    )
    if not present:
        notes = [*over, "nothing to destroy: the state holds no infrastructure."]
        gone: list[str] = []
        if yes:
            with recording(obs.dir, "destroy", yes=True, step="deprovision"):
                if obs.claims and obs.claims.live:
                    stop = stop_daemon(
                        obs, remove=local_install, shell_factory=shell_factory, progress=progress
                    )
                    notes.extend(stop.notes)
                    gone = _forget_host(obs) if stop.reached else []
            if revoked := _revoke(root, name):
                notes.append(revoked)
        after = observe(name, root, dd, probe=False) if yes else obs
        return to_result(after, files=gone).with_notes(*notes)

    from ..backends import get_backend

    backend = get_backend(obs.backend)
    if not yes:
        outcome = backend.destroy(obs.dir, yes=False, progress=progress)
        if outcome.result == "applying" and outcome.lock is not None:
            return _applying(obs, outcome.lock)
        from ._busy import takeover_note

        took = takeover_note(infra, backend.observe_state(obs.dir))
        if took:
            obs = replace(obs, notes=(*obs.notes, took))
        n = outcome.plan.destroy if outcome.plan else (infra.resources if infra else 0)
        what = (
            f"destroy {n} resource{'s' if n != 1 else ''}"
            if n
            else "empty its state (it holds outputs, no resources)"
        )
        return _preview(obs, outcome.plan, what, daemon)

    if obs.backend != "terraform":
        # Ask first whether this backend can destroy at all: the daemon is not taken
        # down for a destroy that cannot follow.
        backend.destroy(obs.dir, yes=False, progress=progress)
    with recording(obs.dir, "destroy", yes=True, step="deprovision") as rec:
        stop = stop_daemon(
            obs, remove=local_install, shell_factory=shell_factory, progress=progress
        )
        notes = [*over, *stop.notes]
        outcome = backend.destroy(obs.dir, yes=True, progress=progress)
        if (
            outcome.result == "applying"
            and outcome.lock is not None
            and outcome.lock.state == "stale"
        ):
            rec.keep()  # terraform was stopped under it: this destroy is unfinished
    if outcome.result == "applying" and outcome.lock is not None:
        from ..world.intent import read_intent

        after = replace(obs, infra=backend.observe_state(obs.dir), intent=read_intent(obs.dir))
        return (
            _applying(after, outcome.lock)
            .with_notes(*notes)
            .model_copy(update={"files": list(outcome.files)})
        )
    from ._busy import takeover_note

    took = takeover_note(infra, backend.observe_state(obs.dir))
    n = outcome.plan.destroy if outcome.plan else 0
    return _after(
        obs,
        root,
        outcome.plan,
        [*outcome.files, *_forget_host(obs)],  # the machine, or the daemon on it, is gone
        [*notes, *([took] if took else [])],
        f"✓ destroyed — {n} resource{'s' if n != 1 else ''}; the scaffold and the decisions are kept",
    )


def _revoke(root: Root, name: str) -> str | None:
    """Revoke the provider's daemon tokens: a removed install's token must not
    register a ghost worker (a note, or None)."""
    from ..world import lakeshore

    return lakeshore.revoke_daemon_tokens(lakeshore.resolve_control_plane(root.path), name)


def _over(obs: Observation) -> list[str]:
    """Destroying over an interrupted verb: say what it supersedes."""
    intent = obs.intent
    if intent is None or not intent.interrupted or intent.verb == "destroy":
        return []
    return [
        f"an interrupted {intent.verb} (started {intent.started_at or '?'}) is superseded: "
        "destroy takes everything down"
    ]


def _forget_host(obs: Observation) -> list[str]:
    """Remove the host ``connect`` recorded once its daemon is gone from there."""
    from ..daemon.host import clear

    gone = clear(obs.dir)
    return [str(gone)] if gone else []


def _after(
    obs: Observation,
    root: Root,
    counts: PlanCounts | None,
    files: list[str],
    notes: list[str],
    headline: str,
) -> ProviderLifecycleResult:
    from ..world import rows

    final = observe(obs.name, root, obs.dream_dir, probe=False)
    dv = derive(final)
    notes = [*notes, *rows.register(final, create=False)]
    if revoked := _revoke(root, obs.name):
        notes.append(revoked)
    return to_result(final, dv, files=files, plan=counts).with_headline(headline).with_notes(*notes)


__all__ = ["destroy"]
