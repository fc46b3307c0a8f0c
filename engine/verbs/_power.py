"""Suspend and resume as reconcile's steps: on a daemon-level vendor the daemon on its
host is stopped (drained first) or started again; on an infrastructure-level one the
target is planned and applied (the machines stop or start, the disks stay), refusing
a plan that would add or destroy, and the daemon is drained before the stop and
started again after it."""

from __future__ import annotations

import time

from ..backends.base import Progress
from ..contract import commands
from ..contract.errors import DreamlakeError
from ..contract.result import ProviderLifecycleResult, Run
from ..daemon import key as daemon_key
from ..daemon.suspend import HostDaemon
from ..lifecycle.actual import ShellFactory, daemon_shell_target, level
from ..remote.base import Shell
from ..settings.records import replace
from ..world import lakeshore
from ..world.derive import Derived, Observation, derive, gated_run
from ..world.observe import observe, to_result
from ..world.paths import Root


def recovery_action(obs: Observation) -> Run:
    """Plan, never apply; an adopted host has nothing to plan: connect afresh, gated."""
    if obs.adopt:
        # Connecting afresh provisions a new daemon: gated as provisioning is.
        return gated_run(obs, commands.connect(obs.name, obs.dream_dir), "provision")
    return Run(command=commands.plan(obs.name, obs.dream_dir))


def watch_claim(obs: Observation, want_live: bool, limit: float) -> Observation:
    cp = lakeshore.resolve_control_plane(obs.dir.parent.parent.parent)
    deadline = time.monotonic() + limit
    # Only this provider's daemons, as status counts them: a namesake elsewhere is not it.
    ident = obs.record.identity(obs.dir) if obs.record else None
    claim = lakeshore.fetch_claims(cp, obs.name, identity=ident)
    while claim is not None and (claim.live > 0) != want_live and time.monotonic() < deadline:
        time.sleep(0.1)
        claim = lakeshore.fetch_claims(cp, obs.name, identity=ident)
    return replace(obs, claims=claim)


def _infra_step(
    obs: Observation,
    root: Root,
    say: Progress,
    files: list[str],
    lines: list[str],
    what: str,
) -> ProviderLifecycleResult:
    """Plan and apply the target on the infrastructure; only a plan that changes
    (never adds, never destroys) is applied without a person."""
    from ..backends import get_backend
    from .plan import failure

    name, dd = obs.name, obs.dream_dir
    backend = get_backend(obs.backend)
    try:
        planned = backend.plan(obs.dir, progress=say)
    except DreamlakeError as exc:
        return failure(obs, root, exc).with_notes(*lines)
    files.extend(planned.files)
    counts = planned.plan
    if planned.result != "ok" or counts is None:
        return to_result(obs, files=files).with_notes(*lines, f"the {what} plan did not finish")
    if counts.add or counts.destroy:
        after = replace(obs, infra=backend.observe_state(obs.dir))
        step = "deprovision" if counts.destroy and not counts.add else "provision"
        if counts.destroy and counts.add and "deprovision" in obs.gating:
            step = "deprovision"
        nxt = gated_run(after, commands.apply_yes(name, dd), step)
        return to_result(after, Derived("ready", nxt, ()), files=files, plan=counts).with_notes(
            *lines,
            f"⚠ the {what} plan would also add {counts.add} and destroy {counts.destroy} "
            "resource(s): not applied. Review it (plan), then apply --yes if a person agrees.",
        )
    try:
        outcome = backend.apply(obs.dir, progress=say)
    except DreamlakeError as exc:
        return failure(obs, root, exc).with_notes(*lines)
    files.extend(outcome.files)
    final = observe(name, root, dd, probe=False)
    return to_result(final, files=sorted(set(files))).with_notes(
        *lines, f"{what}: {counts.change} resource(s) changed"
    )


def _drain_on_the_machine(
    obs: Observation, say: Progress, factory: ShellFactory | None, drain: float
) -> list[str]:
    """Before a machine stops: let its daemon finish the running item and deregister
    (over ssh to the host ``connect`` recorded — never one guessed from the
    outputs). Best effort: a machine that cannot be reached is stopped anyway, and
    the result says its daemon was not drained."""
    from ..daemon.host import unrecorded_note, where
    from ..daemon.suspend import suspend_daemon
    from ..lifecycle.actual import default_shell_factory

    if obs.claims is None or obs.claims.live == 0 or obs.infra is None:
        return []
    found = where(obs)
    if found is None:
        return [
            unrecorded_note(obs, "drained before the stop")
            or "⚠ connect recorded no host for this daemon: it was not drained before the stop"
        ]
    try:
        shell = (factory or default_shell_factory)(None if found.local else found.target)
    except DreamlakeError as exc:
        return [f"⚠ the daemon was not drained before the stop: {exc.message}"]
    try:
        say(f"draining the daemon on {shell.label} (up to {drain:g}s)")
        suspend_daemon(shell, daemon_key.of(obs), timeout=drain)
    except DreamlakeError as exc:
        return [f"⚠ the daemon was not drained before the stop: {exc.message}"]
    finally:
        shell.close()
    return [f"✓ daemon on {shell.label} drained and deregistered before the stop"]


def suspend_step(
    obs: Observation,
    root: Root,
    say: Progress,
    files: list[str],
    lines: list[str],
    factory: ShellFactory | None,
    drain: float,
    host: HostDaemon | None,
) -> ProviderLifecycleResult:
    from ..daemon.suspend import suspend_daemon
    from ..lifecycle.actual import default_shell_factory

    if level(obs) == "infrastructure":
        lines = [*lines, *_drain_on_the_machine(obs, say, factory, drain)]
        return _infra_step(obs, root, say, files, lines, "suspend")
    shell = (factory or default_shell_factory)(daemon_shell_target(obs))
    try:
        say(f"suspending the daemon on {shell.label} (drain up to {drain:g}s)")
        after = suspend_daemon(shell, daemon_key.of(obs), timeout=drain, before=host)
    finally:
        shell.close()
    if after.state == "running":
        raise DreamlakeError(
            f"the daemon on {shell.label} is still running after the suspend",
            kind="suspend_failed",
            next_action=Run(command=commands.suspend(obs.name, obs.dream_dir)),
        )
    seen = watch_claim(obs, False, 10.0)
    res = to_result(seen, files=files)
    return res.with_notes(
        *lines,
        f"✓ daemon stopped under {after.supervisor or 'its supervisor'}; "
        f"work directory kept: {after.workdir}",
    )


def fresh_identity(
    obs: Observation, root: Root, shell: Shell, before: HostDaemon, label: str, say: Progress
) -> list[str]:
    """Before a suspended daemon starts again: a client certificate that ended while
    it was stopped (or would before it could renew it) is replaced the way connect
    does, with a fresh bootstrap token handed to its host
    (:func:`..daemon.identity.fresh_bootstrap`). Raises the mint's error."""
    from ..daemon.identity import fresh_bootstrap

    if before.state == "running" or not before.recoverable:
        return []  # nothing starts here (running, or resume says the state is gone)
    cp = lakeshore.resolve_control_plane(root.path)
    note = fresh_bootstrap(
        shell,
        cp,
        daemon_key.of(obs),
        before.install_dir,
        label=label,
        rerun=commands.resume(obs.name, obs.dream_dir),
        root=root.path,
    )
    if note is None:
        return []
    say(note)
    return [note]


UP = ("applied", "unclaimed")
"""What an infrastructure resume that started the machines again reads as, before
its daemon is back."""


def _daemon_back(
    before: Observation,
    root: Root,
    res: ProviderLifecycleResult,
    say: Progress,
    factory: ShellFactory | None,
    watch: float,
) -> ProviderLifecycleResult:
    """After the machines started again: start the daemon on the host ``connect``
    recorded (``daemon.json``), under the supervisor it had, with the same instance
    id; its install gone (a host rebuilt) → ``connect`` puts a fresh one there. No
    recorded host: nothing to bring back, ``connect`` is the next action."""
    from ..daemon.host import unrecorded_note, where
    from ..daemon.suspend import Unrecoverable, daemon_state, resume_daemon
    from ..lifecycle.actual import default_shell_factory

    obs = observe(before.name, root, before.dream_dir, probe=False)
    found = where(obs)
    if found is None:
        notes = [
            unrecorded_note(obs, "started again")
            or "connect recorded no host for this daemon: connect puts one there"
        ]
        if lakeshore.resolve_control_plane(root.path).url.startswith("https://"):
            # Nothing reaches a daemon that starts there by itself (from the
            # machine's first-boot user-data): one whose client certificate ended
            # while the machines were stopped stays refused, and its log says so.
            notes.append(
                "a daemon that starts on the machines by itself cannot replace a client "
                "certificate that ended while they were stopped (its log says so): connect "
                "puts a daemon there with a fresh bootstrap token"
            )
        return res.with_notes(*notes)
    try:
        shell = (factory or default_shell_factory)(None if found.local else found.target)
    except DreamlakeError as exc:
        return res.with_notes(f"⚠ the daemon on {found.label} was not started again: {exc.message}")
    try:
        say(f"starting the daemon on {shell.label} again")
        host = daemon_state(shell, daemon_key.of(obs))
        renewed = fresh_identity(obs, root, shell, host, found.label, say)
        after, sup = resume_daemon(shell, daemon_key.of(obs), run=True, before=host)
    except Unrecoverable as exc:
        shell.close()
        from .connect import connect

        say(f"{exc.message}: connecting afresh")
        done = connect(
            obs.name, dream_dir=obs.dream_dir, cwd=root.path, progress=say, watch=watch,
            shell_factory=factory,
        )  # fmt: skip
        return done.model_copy(
            update={"files": sorted({*(res.files or []), *(done.files or [])})}
        ).with_notes(*res.notes, f"⚠ {exc.message}: a fresh daemon was connected")
    except DreamlakeError as exc:
        shell.close()
        return res.with_notes(f"⚠ the daemon on {found.label} was not started again: {exc.message}")
    shell.close()
    seen = watch_claim(obs, True, watch)
    if seen.claims is not None and seen.claims.live > 0:
        dv = derive(seen)
    else:
        dv = Derived("connecting", Run(command=commands.status(obs.name, obs.dream_dir)), ())
    return to_result(seen, dv, files=res.files, supervisor=sup, host=found.label).with_notes(
        *res.notes,
        *renewed,
        f"✓ daemon on {found.label} started again under {sup}; work directory: {after.workdir}",
    )


def resume_step(
    obs: Observation,
    root: Root,
    say: Progress,
    files: list[str],
    lines: list[str],
    factory: ShellFactory | None,
    watch: float,
    host: HostDaemon | None,
) -> ProviderLifecycleResult:
    from ..daemon.host import where
    from ..daemon.suspend import Unrecoverable, daemon_state, resume_daemon
    from ..lifecycle.actual import default_shell_factory

    name, dd = obs.name, obs.dream_dir
    if level(obs) == "infrastructure":
        res = _infra_step(obs, root, say, files, lines, "resume")
        if obs.target != "active" or res.kind is not None or res.status not in UP:
            return res
        # The machines run again: so does the daemon connect put there, as it does on
        # a daemon-level vendor (a resume ends connected, not unclaimed).
        return _daemon_back(obs, root, res, say, factory, watch)
    shell = (factory or default_shell_factory)(daemon_shell_target(obs))
    try:
        run = obs.target == "active"
        say(f"resuming the daemon on {shell.label}" + ("" if run else " (kept suspended)"))
        if run:
            host = host or daemon_state(shell, daemon_key.of(obs))
            found = where(obs)
            label = found.label if found is not None else shell.label
            lines = [*lines, *fresh_identity(obs, root, shell, host, label, say)]
        after, sup = resume_daemon(shell, daemon_key.of(obs), run=run, before=host)
    except Unrecoverable as exc:
        return to_result(
            obs,
            Derived("error", recovery_action(obs), obs.blocking),
            files=files,
            error=exc.message,
            kind="unrecoverable",
            root=str(root.path),
        ).with_notes(
            *lines,
            "the state it kept is gone: provisioning afresh starts from nothing "
            "(plan first; a person decides).",
        )
    finally:
        shell.close()
    if not run:
        return to_result(obs, files=files, supervisor=sup).with_notes(
            *lines,
            f"✓ its state survived (work directory {after.workdir}); the daemon's "
            f"{sup} entry is restored, stopped: it stays suspended",
        )
    seen = watch_claim(obs, True, watch)
    if seen.claims is not None and seen.claims.live > 0:
        dv = derive(seen)
    else:
        dv = Derived("connecting", Run(command=commands.status(name, dd)), obs.blocking)
    return to_result(seen, dv, files=files, supervisor=sup).with_notes(
        *lines, f"✓ daemon started again under {sup}; work directory: {after.workdir}"
    )


__all__ = [
    "UP",
    "fresh_identity",
    "recovery_action",
    "resume_step",
    "suspend_step",
    "watch_claim",
]
