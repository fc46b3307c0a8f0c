"""``dreamlake provider apply``: apply exactly the saved plan, only with ``--yes``.

Without ``--yes`` nothing is touched: with a fresh saved plan → ``needs_input``,
the next action the same command with ``--yes``; without one, the derived state
(its next action is ``plan``, never an apply with nothing to apply). A missing
or stale plan is never applied: the result says why and the next action is
``plan``. A lock held by another run or an interrupted apply → ``applying``
(re-run the same command; terraform resumes).
Any other failure → ``error`` with ``plan`` as the recovery, never ``apply``.
"""

from __future__ import annotations

from pathlib import Path

from .. import commands
from ..backends.base import Progress
from ..contract import ProviderLifecycleResult, Run
from ..derive import Derived, Observation, derive, edit_action
from ..errors import DreamlakeError, UsageError
from ..frozen import replace
from ..observe import observe, to_result
from ..paths import Root, check_name
from ._common import error_result, root_for
from .plan import applying, failure


def apply(
    name: str,
    *,
    yes: bool = False,
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
        return _apply(obs, root, yes, progress)
    except DreamlakeError as exc:
        return failure(obs, root, exc)


def _apply(
    obs: Observation, root: Root, yes: bool, progress: Progress | None
) -> ProviderLifecycleResult:
    name, dd = obs.name, obs.dream_dir
    if obs.adopt:
        raise UsageError(
            f"'{name}' adopts an existing host and has no infrastructure to apply",
            next_action=Run(command=commands.connect(name, dd)),
        )
    if obs.blocking:
        return to_result(obs, Derived("needs_input", edit_action(obs, obs.blocking), obs.blocking))
    infra = obs.infra
    if not yes and (infra is None or not infra.plan_fresh):
        # Nothing planned to apply: --yes would not help. Where it stands, and its next step.
        return to_result(obs, files=[]).with_notes(
            "no fresh saved plan to apply: nothing was touched."
        )
    if not yes:
        res = to_result(
            obs,
            Derived("needs_input", Run(command=commands.apply_yes(name, dd)), ()),
            files=[],
            plan=infra.plan if infra and infra.plan_fresh else None,
        )
        return res.with_notes("applying spends money: nothing was touched. Re-run with --yes.")
    if infra is not None and infra.lock is not None and infra.lock.state == "held":
        return applying(obs, infra.lock, commands.apply_yes(name, dd))

    from .. import lakeshore, rows
    from ..backends import get_backend

    assert obs.record is not None
    rows.check(
        lakeshore.resolve_control_plane(root.path),
        name,
        obs.record.identity(obs.dir),
        dd,
        obs.record.vendor,
    )
    backend = get_backend(obs.backend)
    outcome = backend.apply(obs.dir, progress=progress)
    files = list(outcome.files)
    if outcome.result == "applying" and outcome.lock is not None:
        after = replace(obs, infra=backend.observe_state(obs.dir))
        res = applying(after, outcome.lock, commands.apply_yes(name, dd))
        return res.model_copy(update={"files": files})
    if outcome.result == "no_plan":
        after = replace(obs, infra=backend.observe_state(obs.dir))
        dv = derive(after)
        nxt = Run(command=commands.plan(name, dd))
        return to_result(
            after, Derived(dv.status, nxt, dv.blocking), files=files, error=outcome.reason
        ).with_notes(f"{outcome.reason}; run plan, then apply --yes")
    final = observe(name, root, dd, probe=False, claims=True)
    dv = derive(final)
    if dv.status in ("unclaimed", "applied"):
        # The table's row: apply exits 0 -> applied (status says unclaimed next).
        dv = Derived("applied", Run(command=commands.connect(name, dd)), dv.blocking)
    return to_result(final, dv, files=files).with_notes("apply complete", *rows.register(final))


__all__ = ["apply"]
