"""``dreamlake provider reconcile``: cross the actual status with the target, take one step.

1. observe the world; read the target (``target_status`` in the provider's config),
   the capability (``statefulLifecycle`` in TEMPLATE.json) and the gating set;
2. derive the actual status (:mod:`..lifecycle`; for ``local``/``ssh`` one probe of
   the daemon on its host);
3. the planner names a step (:mod:`..planner`);
4. a gated step without ``--yes`` is not performed: ``needs_input`` whose next action
   is the same command with ``--yes`` and ``approval: true`` (an agent stops there
   and asks a person); an ungated one is performed:

   * ``suspend`` — daemon level: drain and stop the daemon (its supervisor entry and
     work directory are kept); infrastructure level: plan and apply the target (the
     machines stop, the disks stay), refusing a plan that would add or destroy;
   * ``resume`` — the reverse; a state that did not survive is ``error`` with a
     recovery next action (``plan``, never ``apply``);
   * ``provision`` — ``connect`` (daemon level), or plan + apply;
   * ``deprovision`` — ``destroy`` (the stateless path's suspend);
   * ``wait`` / ``none`` / ``recover`` — nothing is touched.

``suspend`` and ``resume`` are this verb after setting the target. A second run
finds nothing to do: the state as ``status`` reports it, with ``files: []``.
"""

from __future__ import annotations

from pathlib import Path

from ..backends.base import Progress
from ..contract import commands
from ..contract.errors import DreamlakeError
from ..contract.result import ProviderLifecycleResult, Run
from ..daemon.suspend import HostDaemon
from ..lifecycle.actual import (
    ShellFactory,
    actual_status,
    level,
    observe_host,
    read_applied_stopped,
)
from ..lifecycle.planner import plan_step
from ..lifecycle.target import Target, read_target, write_target
from ..settings.records import replace
from ..world.derive import Derived, Observation, gated_run
from ..world.observe import observe, to_result
from ..world.paths import ProviderPaths, Root, check_name
from ._common import error_result, root_for
from ._power import recovery_action, resume_step, suspend_step

DEFAULT_WATCH = 20.0
DEFAULT_DRAIN = 300.0
Verb = str  # "reconcile", "suspend" or "resume": the command repeated in next actions


def reconcile(
    name: str,
    *,
    yes: bool = False,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    progress: Progress | None = None,
    shell_factory: ShellFactory | None = None,
    watch: float | None = None,
    drain_timeout: float | None = None,
) -> ProviderLifecycleResult:
    """Plan one step towards the provider's target status and perform it unless gated."""
    return run(
        name,
        None,
        "reconcile",
        yes=yes,
        dream_dir=dream_dir,
        cwd=cwd,
        progress=progress,
        shell_factory=shell_factory,
        watch=watch,
        drain_timeout=drain_timeout,
    )


def reconcile_all(
    *,
    yes: bool = False,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    progress: Progress | None = None,
    shell_factory: ShellFactory | None = None,
) -> list[ProviderLifecycleResult]:
    """``reconcile --all``: every provider of the root, in name order."""
    root = root_for(dream_dir, cwd)
    return [
        reconcile(
            n,
            yes=yes,
            dream_dir=dream_dir,
            cwd=cwd,
            progress=progress,
            shell_factory=shell_factory,
        )
        for n in root.known_providers()
    ]


def run(
    name: str,
    new_target: Target | None,
    verb: Verb,
    *,
    yes: bool,
    dream_dir: str | None,
    cwd: Path | None,
    progress: Progress | None,
    shell_factory: ShellFactory | None,
    watch: float | None,
    drain_timeout: float | None,
) -> ProviderLifecycleResult:
    """Set the target (``new_target``, unless None), then reconcile."""
    root = root_for(dream_dir, cwd)
    say = progress or (lambda _m: None)
    try:
        check_name(name)
        obs = observe(name, root, dream_dir, probe=False)
    except DreamlakeError as exc:
        return error_result(exc, name, root=root, dream_dir=dream_dir)
    vendor = obs.record.vendor if obs.record else None
    try:
        return _run(
            obs,
            root,
            new_target,
            verb,
            yes,
            say,
            shell_factory,
            DEFAULT_WATCH if watch is None else watch,
            DEFAULT_DRAIN if drain_timeout is None else drain_timeout,
        )
    except DreamlakeError as exc:
        return error_result(
            exc,
            name,
            root=root,
            vendor=vendor,
            dream_dir=dream_dir,
            default_next=Run(command=commands.status(name, dream_dir)),
        )


def _command(verb: Verb, name: str, dd: str | None, yes: bool) -> str:
    builder = {
        "suspend": commands.suspend,
        "resume": commands.resume,
        "reconcile": commands.reconcile,
    }[verb]
    return builder(name, dd, yes)


def _run(
    obs: Observation,
    root: Root,
    new_target: Target | None,
    verb: Verb,
    yes: bool,
    say: Progress,
    factory: ShellFactory | None,
    watch: float,
    drain: float,
) -> ProviderLifecycleResult:
    from ..lifecycle.gating import step_words
    from ._busy import busy, may_act

    assert obs.record is not None
    name, dd = obs.name, obs.dream_dir
    paths = ProviderPaths(obs.dir)
    if not may_act(obs, verb):
        # A verb in flight or interrupted: the one answer every verb gives.
        return busy(obs, verb, files=[])
    if obs.blocking:
        # Decisions still open: there is nothing to suspend or resume yet.
        return to_result(obs, files=[]).with_notes(
            f"'{name}' has open decisions; {verb} acts once it is applied or connected."
        )
    # This verb re-run over its own interrupted run (may_act let it through): that
    # record is superseded by this run, and what it derives is the world's state,
    # not the interruption's ``applying``.
    rerun = obs.intent is not None and obs.intent.interrupted
    if rerun:
        obs = replace(obs, intent=None)
    assert obs.record is not None
    target: Target = new_target or read_target(paths, obs.backend)
    stateful = obs.stateful
    gating = obs.gating
    host = observe_host(obs, factory)
    actual = actual_status(obs, host, read_applied_stopped(obs))
    # Suspended on purpose (the target this run found): a daemon whose supervisor
    # entry was lost since still resumes what it kept, as status offers.
    gone = obs.intent is not None and obs.intent.outcome in ("destroyed", "gone")
    there = obs.adopt or (obs.infra is not None and obs.infra.present)
    kept = obs.target == "suspended" and level(obs) == "daemon" and there and not gone
    step = plan_step(actual, target, stateful, gating, kept=kept)
    say(f"actual {actual}, target {target}: {step.action} ({step.why})")
    lines = [f"actual: {actual}   target: {target}   step: {step.action} — {step.why}"]
    if not stateful and step.action in ("deprovision", "provision") and target == "suspended":
        lines.append(
            f"{obs.record.vendor} has no stateful lifecycle (statefulLifecycle: false): "
            "suspend destroys it and resume provisions it afresh; nothing it held is kept."
        )
    elif not stateful and step.action == "provision" and new_target == "active":
        lines.append(f"{obs.record.vendor} has no stateful lifecycle: resume provisions it afresh.")

    if step.action == "provision" and not there:
        # From nothing: a person reviews the plan before anything is applied.
        return _from_nothing(obs, root, yes or not step.gated, say, lines)

    if step.gated and not yes:
        nxt = gated_run(obs, _command(verb, name, dd, True), step.action)
        res = to_result(obs, Derived("needs_input", nxt, obs.blocking), files=[])
        return res.with_headline(
            f"⚠ needs a person's yes: {step_words(step.action, obs.template)}"
        ).with_notes(
            *lines,
            f"'{step.action}' needs a person's yes (gating: {', '.join(sorted(gating)) or '-'}): "
            "nothing was touched. Re-run with --yes once a person agrees.",
        )

    if step.action in ("none", "wait", "recover"):
        if rerun:
            # The interrupted run got where it was going (or as far as it can):
            # nothing is left for it to do, so its record is finished with.
            from ..world.intent import clear_intent

            clear_intent(obs.dir)
        return _step(
            obs,
            root,
            new_target,
            verb,
            step.action,
            target,
            say,
            factory,
            watch,
            drain,
            host,
            lines,
            yes,
        )
    from ..world.intent import recording

    # What this verb started is recorded until it returns: interrupted, it is
    # recognised as this verb and re-run (see ..intent).
    with recording(obs.dir, verb, yes=yes or step.gated, step=step.action) as rec:
        res = _step(
            obs,
            root,
            new_target,
            verb,
            step.action,
            target,
            say,
            factory,
            watch,
            drain,
            host,
            lines,
            yes,
        )
        if res.kind == "unrecoverable":
            rec.finish("gone")  # nothing was kept: the provider must not read suspended
        elif res.status == "connecting" and rec.outcome is None:
            rec.finish("connecting")  # started again, no claim yet: status says connecting
    return res


def _step(
    obs: Observation,
    root: Root,
    new_target: Target | None,
    verb: Verb,
    action: str,
    target: Target,
    say: Progress,
    factory: ShellFactory | None,
    watch: float,
    drain: float,
    host: HostDaemon | None,
    lines: list[str],
    yes: bool,
) -> ProviderLifecycleResult:
    name, dd = obs.name, obs.dream_dir
    paths = ProviderPaths(obs.dir)
    files: list[str] = []
    if new_target is not None:
        written = write_target(paths, obs.backend, new_target)
        if written is not None:
            files.append(str(written))
            say(f"target_status = {new_target} in {written}")
        obs = replace(obs, target=new_target)

    if action == "none":
        res = to_result(obs, files=files)
        return res.with_headline(
            f"'{name}' is already {'suspended' if target == 'suspended' else 'active'}"
            " — nothing to do" + ("" if not files else f" (target written to {files[0]})")
        ).with_notes(*lines)
    if action == "wait":
        res = to_result(obs, files=files)
        if res.status == "connected":  # a worker joining: it counts as live already
            return res.with_notes(*lines)
        return res.with_notes(
            *lines, "re-run when it has landed: " + _command(verb, name, dd, False)
        )
    if action == "recover":
        return _recover(obs, root, files, lines)
    if action == "deprovision":
        return _deprovision(obs, root, yes, say, files, lines, factory)
    if action == "provision":
        return _provision(obs, root, say, files, lines, factory, watch)
    if action == "suspend":
        return suspend_step(obs, root, say, files, lines, factory, drain, host)
    return resume_step(obs, root, say, files, lines, factory, watch, host)


def _from_nothing(
    obs: Observation, root: Root, go: bool, say: Progress, lines: list[str]
) -> ProviderLifecycleResult:
    """Provisioning from nothing stops at ``ready`` first, as the verbs do one by
    one: plan (it reads and costs nothing) and return its result — ``ready`` with
    ``apply --yes`` (flagged as provisioning is), or what it needs. Only a fresh
    saved plan, the one a person could review, is applied, and only when ``go``
    (``--yes``, or provisioning is not gated)."""
    infra = obs.infra
    fresh = infra is not None and infra.plan_fresh and not obs.blocking
    if fresh and go:
        from .apply import apply

        res = apply(obs.name, yes=True, dream_dir=obs.dream_dir, cwd=root.path, progress=say)
        return res.with_notes(*lines, "applied the saved plan (reviewed at ready)")
    if fresh:
        res = to_result(obs, files=[])
    else:
        from .plan import plan

        res = plan(obs.name, dream_dir=obs.dream_dir, cwd=root.path, progress=say)
    return res.with_notes(
        *lines,
        "from nothing, reconcile stops at ready: nothing is applied before its plan is "
        "reviewed (plan shows it; the next action applies that plan)",
    )


def _recover(
    obs: Observation, root: Root, files: list[str], lines: list[str]
) -> ProviderLifecycleResult:
    return to_result(
        obs,
        Derived("error", recovery_action(obs), obs.blocking),
        files=files,
        error=f"'{obs.name}' is in a failed state (an interrupted apply or a partial state); "
        "plan to see what it would take to recover",
        kind="failed_state",
        root=str(root.path),
    ).with_notes(*lines)


def _deprovision(
    obs: Observation,
    root: Root,
    yes: bool,
    say: Progress,
    files: list[str],
    lines: list[str],
    factory: ShellFactory | None,
) -> ProviderLifecycleResult:
    from importlib import import_module

    try:
        destroy_mod = import_module(".destroy", __package__)
    except ModuleNotFoundError:
        return to_result(
            obs,
            Derived("error", Run(command=commands.status(obs.name, obs.dream_dir)), ()),
            files=files,
            error="destroy is not available in this dreamlake, so the stateless suspend "
            "(destroy) cannot run; nothing was touched",
            kind="destroy_unavailable",
        ).with_notes(*lines)
    # The root this run found (not the provider's folder: without --dream-dir or a
    # .dreamrc above it, that would be a root of its own, holding no provider).
    res: ProviderLifecycleResult = destroy_mod.destroy(
        obs.name,
        yes=yes,
        dream_dir=obs.dream_dir,
        cwd=root.path,
        progress=say,
        shell_factory=factory,
    )
    return res.model_copy(update={"files": [*files, *(res.files or [])]}).with_notes(*lines)


def _provision(
    obs: Observation,
    root: Root,
    say: Progress,
    files: list[str],
    lines: list[str],
    factory: ShellFactory | None,
    watch: float,
) -> ProviderLifecycleResult:
    from .connect import connect

    if obs.adopt or (obs.infra is not None and obs.infra.present):
        res = connect(
            obs.name,
            dream_dir=obs.dream_dir,
            cwd=root.path,
            progress=say,
            watch=watch,
            shell_factory=factory,
        )
    else:
        from .apply import apply
        from .plan import plan

        planned = plan(obs.name, dream_dir=obs.dream_dir, cwd=root.path, progress=say)
        if planned.status != "ready":
            return planned.with_notes(*lines)
        res = apply(obs.name, yes=True, dream_dir=obs.dream_dir, cwd=root.path, progress=say)
    return res.model_copy(update={"files": [*files, *(res.files or [])]}).with_notes(*lines)


__all__ = ["reconcile", "reconcile_all", "run"]
