"""The pure deriver: an ``Observation`` of the world → status, blocking, nextAction.

No I/O here. Every row of the spec's verb × world table that does not depend on
what a verb just did is decided in ``derive``; verbs add their own outcomes
(``exists``, ``error``, ``connecting``, apply without ``--yes``) on top.
"""

from __future__ import annotations

from pathlib import Path

from . import commands
from .backends.base import InfraState
from .contract import Blocking, Claim, EditThenContinue, ProviderStatus, Run, Shell
from .frozen import field, frozen
from .record import ProviderRecord
from .vendors import Template

NextAction = EditThenContinue | Run | Shell | None


@frozen
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

    @property
    def backend(self) -> str:
        return self.record.backend if self.record else "terraform"

    @property
    def adopt(self) -> bool:
        return self.backend == "none"


@frozen
class Derived:
    status: ProviderStatus
    next_action: NextAction
    blocking: tuple[Blocking, ...]


def edit_action(obs: Observation, blocking: tuple[Blocking, ...]) -> EditThenContinue:
    """Open the file of the first blocking decision, then re-run create --continue."""
    file = next((b.file for b in blocking if b.file), None) or str(obs.dir)
    return EditThenContinue(file=file, command=commands.create_continue(obs.name, obs.dream_dir))


def derive(obs: Observation) -> Derived:
    """Where the provider stands, from the world alone (the ``status`` verb)."""
    name, dd = obs.name, obs.dream_dir
    infra = obs.infra or InfraState()
    claims = obs.claims

    if infra.lock is not None:
        return Derived("applying", Run(command=commands.apply_yes(name, dd)), obs.blocking)
    if infra.failed_apply is not None:
        # An apply that failed part-way is a failure to recover from, never "applied":
        # plan shows what is left to do (recovery is plan, never apply).
        tf = obs.dir / ("pulumi" if obs.backend == "pulumi" else "terraform")
        nxt = EditThenContinue(file=str(tf), command=commands.plan(name, dd))
        return Derived("error", nxt, obs.blocking)
    if claims is not None and claims.live > 0:
        return Derived("connected", None, obs.blocking)
    if infra.plan_fresh and infra.plan_changes and not obs.blocking and not obs.adopt:
        # A saved plan that would change the infrastructure: applied or not, it is ready.
        return Derived("ready", Run(command=commands.apply_yes(name, dd)), ())
    adopted = obs.adopt and claims is not None and claims.gone > 0
    if (infra.present or adopted) and (obs.target == "suspended" or _stopped(infra)):
        # Stopped on purpose, its state kept: not a daemon that died (unclaimed).
        return Derived("suspended", Run(command=commands.resume(name, dd)), obs.blocking)
    if infra.present or adopted:
        connect = Run(command=commands.connect(name, dd))
        if claims is None:
            return Derived("applied", connect, obs.blocking)
        return Derived("unclaimed", connect, obs.blocking)
    if obs.blocking:
        return Derived("needs_input", edit_action(obs, obs.blocking), obs.blocking)
    if obs.adopt:
        return Derived("scaffolded", Run(command=commands.connect(name, dd)), ())
    if infra.plan_fresh:
        return Derived("ready", Run(command=commands.apply_yes(name, dd)), ())
    return Derived("scaffolded", Run(command=commands.plan(name, dd)), ())


def _stopped(infra: InfraState) -> bool:
    """The infrastructure says its machines are stopped (a ``power_state`` output)."""
    from .power import power_stopped

    return power_stopped(infra.outputs)
