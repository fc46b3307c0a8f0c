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

from ..backends.base import Progress
from ..contract import commands
from ..contract.errors import DreamlakeError, UsageError
from ..contract.result import ProviderLifecycleResult, Run
from ..lifecycle.gating import step_words
from ..settings.records import replace
from ..world.derive import Derived, Observation, derive, edit_action, step_action
from ..world.observe import observe, to_result, with_claims
from ..world.paths import Root, check_name
from ._common import error_result, root_for


def apply(
    name: str,
    *,
    yes: bool = False,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    progress: Progress | None = None,
) -> ProviderLifecycleResult:
    root = root_for(dream_dir, cwd)
    ahead = yes and _claimed(root, name)
    if not ahead:
        return _checked(name, root, dream_dir, yes, progress, infra=True)
    # terraform's apply started ahead, once every check below had passed (the console
    # script's ``early_apply``): the checks run again as always, but the state, which
    # that apply is writing, is looked at only once it has finished.
    from ..backends.terraform import early_apply

    pdir = root.provider_dir(name)
    try:
        res = _checked(name, root, dream_dir, yes, progress, infra=False)
    except Exception:
        early_apply.settle(pdir)  # waited for; its record removed, as recording does
        raise
    except BaseException:
        early_apply.settle(pdir, interrupted=True)  # Ctrl-C: terraform had it too
        raise
    ran = early_apply.settle(pdir)
    if ran is None:
        return res
    # Answered before taking it (the console script's checks passed what the verb's
    # refused): terraform's apply ran all the same, and the answer says so.
    said = (
        "terraform's apply, started ahead of this answer once the checks before it had "
        f"passed, ran to its end (exit {ran.returncode}); status says where things stand now"
    )
    notes = res.notes
    res = res.model_copy(update={"error": f"{res.error}; {said}" if res.error else said})
    return res.with_notes(*notes, said)


def _claimed(root: Root, name: str) -> bool:
    """Whether the console script started this provider's apply ahead (its record of
    the verb then reads as this run's own)."""
    import sys

    early = sys.modules.get("dreamlake.engine.backends.terraform.early_apply")
    return early is not None and early.claim(root.provider_dir(name))


def _checked(
    name: str,
    root: Root,
    dream_dir: str | None,
    yes: bool,
    progress: Progress | None,
    *,
    infra: bool,
) -> ProviderLifecycleResult:
    try:
        check_name(name)
        obs = observe(name, root, dream_dir, claims=False, infra=infra)
    except DreamlakeError as exc:
        return error_result(exc, name, root=root, dream_dir=dream_dir)
    try:
        return _apply(obs, root, yes, progress)
    except DreamlakeError as exc:
        from .plan import failure  # a failed apply answers as a failed plan does

        if not infra:  # the answer reads the state as the apply found it
            from ..backends.terraform.early_apply import state_before

            obs = replace(obs, infra=state_before(obs.dir))
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
    from ._busy import busy, may_act, takeover_note

    if not may_act(obs, "apply"):
        return busy(obs, "apply")
    if not yes and (infra is None or not infra.plan_fresh):
        # Nothing planned to apply: --yes would not help. Where it stands (as status
        # says it), and its next step.
        return to_result(with_claims(obs, root), files=[]).with_notes(
            "no fresh saved plan to apply: nothing was touched."
        )
    if not yes and infra is not None and infra.present and not infra.plan_changes:
        # The saved plan changes nothing (outputs included): no go-ahead to ask for.
        # Where it stands, as plan and status say it.
        return to_result(with_claims(obs, root), files=[]).with_notes(
            "the saved plan changes nothing: there is nothing to apply, and nothing was touched."
        )
    if not yes:
        res = to_result(
            obs,
            Derived("needs_input", step_action(obs, "apply"), ()),
            files=[],
            plan=infra.plan if infra and infra.plan_fresh else None,
        )
        res = res.with_headline(f"⚠ needs your go-ahead: {step_words('provision', obs.template)}")
        return res.with_notes("nothing was touched. Re-run with --yes.")

    from ..backends import get_backend
    from ..world import lakeshore, rows
    from ..world.intent import recording

    assert obs.record is not None
    cp = obs.cp or lakeshore.resolve_control_plane(root.path)
    rows.check(
        cp,
        name,
        obs.record.identity(obs.dir),
        dd,
        obs.record.vendor,
    )
    backend = get_backend(obs.backend)
    interrupted = obs.intent is not None and obs.intent.interrupted
    stale = infra is not None and infra.lock is not None
    if (interrupted or stale) and (infra is None or not infra.plan_fresh):
        # The interrupted run's plan no longer matches the state it left: plan again
        # (terraform takes the stale lock over) and stop at ready, so the plan a
        # person says yes to is the one that will be applied.
        from .plan import plan

        res = plan(name, dream_dir=dd, cwd=root.path, progress=progress)
        return res.with_notes(
            "the interrupted apply's saved plan no longer matches the state it left: "
            "planned again; nothing was applied"
        )
    with recording(obs.dir, "apply", yes=True, step="provision") as rec:
        outcome = backend.apply(obs.dir, progress=progress)
        if (
            outcome.result == "applying"
            and outcome.lock is not None
            and outcome.lock.state == "stale"
        ):
            rec.keep()  # terraform was stopped under it: this apply is unfinished
    files = list(outcome.files)
    if outcome.result == "applying" and outcome.lock is not None:
        from ..world.intent import read_intent
        from .plan import applying

        after = replace(obs, infra=backend.observe_state(obs.dir), intent=read_intent(obs.dir))
        res = applying(after, outcome.lock, "apply")
        return res.model_copy(update={"files": files})
    if outcome.result == "no_plan":
        after = replace(obs, infra=backend.observe_state(obs.dir))
        dv = derive(after)
        nxt = Run(command=commands.plan(name, dd))
        return to_result(
            after, Derived(dv.status, nxt, dv.blocking), files=files, error=outcome.reason
        ).with_notes(f"{outcome.reason}; run plan, then apply --yes")
    # The world after terraform: its state, the claims and the intent record, the rest
    # as this run read it (terraform writes nothing else the observation holds).
    final = observe(name, root, dd, probe=False, claims=True, cp=cp, before=obs)
    took = takeover_note(infra, final.infra)
    dv = derive(final)
    if dv.status in ("unclaimed", "applied"):
        # The table's row: apply exits 0 -> applied (status says unclaimed next).
        dv = Derived("applied", Run(command=commands.connect(name, dd)), dv.blocking)
    registered, refused = rows.register_outcome(final)
    error = None
    if refused is not None:
        # The row was not registered: said in the result, and connect would be refused
        # the same way, so the next action is the fix, not connect.
        from ..world import refusal

        fix_next, fix = refusal.next_for(cp, refused, root.path, commands.connect(name, dd))
        error = f"the provider row '{name}' was not registered: {refused}; {fix}"
        if dv.next_action is not None:  # connected stays done
            dv = Derived(dv.status, fix_next, dv.blocking)
    return to_result(final, dv, files=files, error=error).with_notes(
        "apply complete", *([took] if took else []), *registered
    )


__all__ = ["apply"]
