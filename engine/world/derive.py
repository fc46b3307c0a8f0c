"""The pure deriver: an ``Observation`` of the world → status, blocking, nextAction.

No I/O here. Every row of the spec's verb × world table that does not depend on
what a verb just did is decided in ``derive``; verbs add their own outcomes
(``exists``, ``error``, apply without ``--yes``) on top.

The world includes the record of a verb the engine started (``intent.json``, see
:mod:`.intent`): a verb in flight or interrupted is ``applying`` and its next action
re-runs that verb; a daemon just started and not claiming yet is ``connecting``.
Every next action that runs a lifecycle step is flagged ``approval`` exactly when
that step is in the provider's effective gating set (:func:`gated_run`).
"""

from __future__ import annotations

from pathlib import Path

from ..backends.base import InfraState
from ..contract import commands
from ..contract.result import (
    Blocking,
    Claim,
    EditThenContinue,
    LockInfo,
    ProviderStatus,
    Run,
    Shell,
)
from ..lifecycle.gating import DEFAULT, is_gated, verb_step
from ..settings.records import field, record
from .intent import ACTING_VERBS, START_WINDOW, Intent
from .record import ProviderRecord
from .vendors import Template

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Literal

    from ..scan.result import ScanResult
    from .lakeshore import ControlPlane

NextAction = EditThenContinue | Run | Shell | None

# The states in which infrastructure stands as applied: a live drift record there is
# reported (``"drift"`` in ``degraded``, the ``drift`` member) and its next action is
# ``plan``, which shows what an apply would put back. No new state.
DRIFT_STATUSES = frozenset({"applied", "unclaimed", "connected"})


@record()
class Observation:
    """Everything one run read of the world, in the spec's order."""

    name: str
    dir: Path
    dream_dir: str | None  # the --dream-dir flag as given, repeated in commands
    record: ProviderRecord | None
    template: Template | None
    blocking: tuple[Blocking, ...] = ()
    degraded: tuple[str, ...] = ()
    infra: InfraState | None = None
    claims: Claim | None = None  # None: the control plane could not be asked
    server: str = ""
    namespace: str = "default"
    notes: tuple[str, ...] = field(default=())
    target: str = "active"  # target_status from the provider's config (desired state)
    # The steps that need a person's yes for this provider (the effective gating set).
    gating: frozenset[str] = DEFAULT
    intent: Intent | None = None  # the record of a verb the engine started (intent.json)
    # The daemon as its supervisor shows it: "running", "none" (asked: nothing runs
    # it), or None (not asked).
    daemon: str | None = None
    now: float = 0.0  # when the world was read (epoch seconds; the start window)
    # For a verb that reads the world again after it acted (``observe(before=...)``):
    # the control plane in force and the decision scan's answer, as this run found
    # them. Neither is compared or shown.
    cp: ControlPlane | None = field(default=None, repr=False, compare=False)
    scanned: ScanResult | None = field(default=None, repr=False, compare=False)

    @property
    def backend(self) -> str:
        return self.record.backend if self.record else "terraform"

    @property
    def adopt(self) -> bool:
        return self.backend == "none"

    @property
    def stateful(self) -> bool:
        return self.template.stateful_lifecycle if self.template else False


@record()
class Derived:
    """What ``derive`` decides: the status, the next action and what blocks it."""

    status: ProviderStatus
    next_action: NextAction
    blocking: tuple[Blocking, ...]
    lock: LockInfo | None = None  # what makes it ``applying`` (a lock, an intent record)


def gated_run(obs: Observation, command: str, step: str | None) -> Run:
    """A ``run`` next action, flagged ``approval`` exactly when ``step`` is gated for
    this provider. The one place a lifecycle next action gets its flag."""
    return Run(command=command, approval=True if step and is_gated(step, obs.gating) else None)


def step_action(obs: Observation, verb: str, step: str | None = None) -> Run:
    """The next action that runs ``verb`` (apply, destroy, delete, suspend, resume,
    reconcile): with ``--yes`` where the verb needs it, flagged as its step is gated.
    ``step``: the step it performs when the verb alone does not say (reconcile)."""
    name, dd = obs.name, obs.dream_dir
    step = step or verb_step(verb, obs.stateful)
    gated = step is not None and is_gated(step, obs.gating)
    builders = {
        "apply": lambda: commands.apply_yes(name, dd),
        "destroy": lambda: commands.destroy_yes(name, dd),
        "delete": lambda: commands.delete_yes(name, dd),
        "suspend": lambda: commands.suspend(name, dd, gated),
        "resume": lambda: commands.resume(name, dd, gated),
        "reconcile": lambda: commands.reconcile(name, dd, gated),
    }
    return gated_run(obs, builders[verb](), step)


def edit_action(obs: Observation, blocking: tuple[Blocking, ...]) -> EditThenContinue:
    """Open the file of the first blocking decision, then re-run create --continue."""
    file = next((b.file for b in blocking if b.file), None) or str(obs.dir)
    return EditThenContinue(file=file, command=commands.create_continue(obs.name, obs.dream_dir))


def derive(obs: Observation) -> Derived:
    """Where the provider stands, from the world alone (the ``status`` verb)."""
    name, dd = obs.name, obs.dream_dir
    infra = obs.infra or InfraState()
    claims = obs.claims
    intent = obs.intent
    live = claims is not None and claims.live > 0

    if intent is not None and intent.verb in ACTING_VERBS and not intent.finished:
        return applying(obs)
    if infra.lock is not None:
        return applying(obs)
    if infra.failed_apply is not None:
        # An apply that failed part-way is a failure to recover from, never "applied":
        # plan shows what is left to do (recovery is plan, never apply).
        tf = obs.dir / ("pulumi" if obs.backend == "pulumi" else "terraform")
        nxt = EditThenContinue(file=str(tf), command=commands.plan(name, dd))
        return Derived("error", nxt, obs.blocking)
    if live:
        return Derived("connected", after_drift(obs, None), obs.blocking)
    if starting(obs):
        return Derived("connecting", Run(command=commands.status(name, dd)), obs.blocking)
    if infra.plan_fresh and infra.plan_changes and not obs.blocking and not obs.adopt:
        # A saved plan that would change the infrastructure: applied or not, it is ready.
        return Derived("ready", step_action(obs, "apply"), ())
    nothing_kept = intent is not None and intent.outcome in ("destroyed", "gone")
    adopted = obs.adopt and claims is not None and claims.gone > 0 and not nothing_kept
    kept = not nothing_kept and (obs.target == "suspended" or _stopped(infra))
    if (infra.present or adopted) and kept:
        # Stopped on purpose, its state kept: not a daemon that died (unclaimed).
        return Derived("suspended", step_action(obs, "resume"), obs.blocking)
    if infra.present or adopted:
        connect = after_drift(obs, Run(command=commands.connect(name, dd)))
        if claims is None:
            return Derived("applied", connect, obs.blocking)
        return Derived("unclaimed", connect, obs.blocking)
    if obs.blocking:
        return Derived("needs_input", edit_action(obs, obs.blocking), obs.blocking)
    if obs.adopt:
        return Derived("scaffolded", Run(command=commands.connect(name, dd)), ())
    if infra.plan_fresh:
        return Derived("ready", step_action(obs, "apply"), ())
    return Derived("scaffolded", Run(command=commands.plan(name, dd)), ())


def drifted(obs: Observation) -> bool:
    """The last drift check, taken against the current state, found resources
    changed outside (the backend dropped any record of an older state)."""
    infra = obs.infra
    return infra is not None and infra.present and infra.drift is not None and infra.drift.drifted


def after_drift(obs: Observation, default: Run | None) -> Run | None:
    """``plan`` for a drifted provider (it reads, costs nothing, and shows what an
    apply would put back), else ``default``."""
    return Run(command=commands.plan(obs.name, obs.dream_dir)) if drifted(obs) else default


def starting(obs: Observation) -> bool:
    """A daemon that is starting: a ``connect`` is in flight, or a verb (connect, a
    resume) started it within :data:`START_WINDOW` and its supervisor runs it; no
    claim yet."""
    intent = obs.intent
    if intent is None:
        return False
    if intent.verb == "connect" and intent.in_flight:
        return True
    return (
        intent.outcome == "connecting"
        and obs.daemon == "running"
        and 0 <= obs.now - intent.started <= START_WINDOW
    )


def interrupted_verb(obs: Observation) -> str | None:
    """The verb an ``applying`` provider is in the middle of: the intent record's,
    else ``apply`` (a terraform lock the engine did not take: a run by hand)."""
    intent = obs.intent
    if intent is not None and intent.verb in ACTING_VERBS and not intent.finished:
        return intent.verb
    infra = obs.infra
    return "apply" if infra is not None and infra.lock is not None else None


def applying(obs: Observation) -> Derived:
    """``applying``: a verb in flight (a live process holds it) or interrupted (its
    process is gone). One answer whichever verb asks: the next action re-runs the
    verb that was started — terraform (or the verb) owns the recovery — gated as it
    was. A stale lock is never an apply in flight: ``lock.state`` says which."""
    infra = obs.infra or InfraState()
    intent = obs.intent
    verb = interrupted_verb(obs) or "apply"
    own = intent if intent is not None and intent.verb == verb and not intent.finished else None
    held = (own is not None and own.alive) or (
        infra.lock is not None and infra.lock.state == "held"
    )
    nxt = step_action(obs, verb, own.step if own else None)
    return Derived("applying", nxt, obs.blocking, lock=_lock(obs, verb, own, held))


def article(word: str) -> str:
    """``an apply``, ``a destroy``."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def _lock(obs: Observation, verb: str, own: Intent | None, held: bool) -> LockInfo:
    tf_lock = obs.infra.lock if obs.infra else None
    state: Literal["held", "stale"] = "held" if held else "stale"
    if own is None:
        assert tf_lock is not None
        return tf_lock
    who = f"pid {own.pid} on {own.host}" if own.host else f"pid {own.pid}"
    if held:
        detail = f"{article(verb)} started by dreamlake is in flight ({who})"
    else:
        detail = (
            f"{article(verb)} started at {own.started_at or '?'} was interrupted ({who} is gone); "
            f"re-run {verb} to finish it"
        )
    if tf_lock is not None:
        detail = f"{detail}; {tf_lock.detail}" if tf_lock.detail else detail
        return LockInfo(
            state=state,
            path=tf_lock.path,
            who=tf_lock.who or who,
            since=tf_lock.since or own.started_at or None,
            operation=verb,
            detail=detail,
        )
    return LockInfo(
        state=state,
        path=own.path or None,
        who=who,
        since=own.started_at or None,
        operation=verb,
        detail=detail,
    )


def _stopped(infra: InfraState) -> bool:
    """The infrastructure says its machines are stopped (a ``power_state`` output)."""
    from .power import power_stopped

    return power_stopped(infra.outputs)
