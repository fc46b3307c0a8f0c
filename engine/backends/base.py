"""The backend interface: terraform and pulumi map their own facts onto these
shared shapes; only the deriver decides a status.

Backends are imported lazily by name so ``status`` never pays for pulumi.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from ..contract.result import Blocking, LockInfo, PlanCounts
from ..settings.records import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Literal

    from .driftrecord import DriftRecord  # read only where a drift record exists
    from .protocol import Backend


@record()
class InfraState:
    """What the backend's state says, read without running the tool where possible.

    ``present``: a state exists with at least one resource (infrastructure exists).
    ``lock``: a held or stale lock / interrupted operation (→ applying).
    ``plan_fresh``: a saved plan newer than every input, made against the current
    state (→ ready), with its counts in ``plan``.
    ``stale_hint``: a sentence when the state may not match the world without a refresh.
    ``drift``: the last drift check's record, when it was taken against this state.
    """

    present: bool = False
    resources: int = 0
    outputs: dict[str, Any] = field(default_factory=dict)
    lock: LockInfo | None = None
    partial: bool = False
    plan_fresh: bool = False
    plan: PlanCounts | None = None
    plan_changes: bool = True
    stale_hint: str | None = None
    notes: tuple[str, ...] = ()
    # An apply that failed part-way: the resources it left (addresses), else None.
    failed_apply: tuple[str, ...] | None = None
    drift: DriftRecord | None = None


@record()
class PlanOutcome:
    """``ok`` with counts, or ``needs_input`` with blocking, or an error raised as
    a BackendError / BinaryMissing."""

    result: Literal["ok", "needs_input"]
    plan: PlanCounts | None = None
    blocking: tuple[Blocking, ...] = ()
    files: tuple[str, ...] = ()


@record()
class ApplyOutcome:
    """``applied``; ``applying`` (lock held / interrupted, with ``lock``); ``no_plan``
    (missing or stale saved plan: not applied, run plan)."""

    result: Literal["applied", "applying", "no_plan"]
    lock: LockInfo | None = None
    reason: str = ""
    files: tuple[str, ...] = ()


@record()
class DestroyOutcome:
    """``destroyed``; ``preview`` (``yes=False``: what a destroy would remove, in
    ``plan``; nothing changed); ``applying`` (a lock held or an interrupted
    operation is in the way, with ``lock``). Failures raise the backend's error."""

    result: Literal["destroyed", "preview", "applying"]
    plan: PlanCounts | None = None
    lock: LockInfo | None = None
    files: tuple[str, ...] = ()


Progress = Callable[[str], None]


_BACKENDS = {
    "terraform": "dreamlake.engine.backends.terraform",
    "pulumi": "dreamlake.engine.backends.pulumi",
}


def observe_state(name: str, provider_dir: Path) -> InfraState:
    """The named backend's state, read without loading its tool runner: the backend
    package's own ``observe_state`` where it has one (``status`` stays cheap)."""
    reader = getattr(import_module(_BACKENDS[name]), "observe_state", None)
    if reader is None:
        return get_backend(name).observe_state(provider_dir)
    state: InfraState = reader(provider_dir)
    return state


def get_backend(name: str) -> Backend:
    """The backend named in provider.json. Each backend package exposes ``BACKEND``."""
    mod = import_module(_BACKENDS[name])
    backend: Backend = mod.BACKEND
    return backend


def __getattr__(name: str) -> Any:
    """``Backend``, the interface as a ``typing.Protocol`` (``protocol``), loaded where
    it is asked for: the verbs name it in annotations only, and ``typing`` costs
    about 5 ms of CPU on the paths an agent runs in a loop."""
    if name == "Backend":
        from .protocol import Backend

        return Backend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_drift(name: str, provider_dir: Path, *, progress: Progress | None = None) -> DriftRecord:
    """The named backend's drift check (its ``drift`` module's ``check_drift``): a
    refresh that writes no state, recorded beside the plan record."""
    mod = import_module(_BACKENDS[name] + ".drift")
    record: DriftRecord = mod.check_drift(provider_dir, progress=progress)
    return record
