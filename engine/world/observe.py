"""One place that reads the world: provider.json, the decision scan, backend state
and locks, control-plane claims — in the spec's order — into an ``Observation``;
and one place that turns an observation plus a verb's outcome into a result.
"""

from __future__ import annotations

from pathlib import Path

from ..contract import commands
from ..contract.errors import DreamlakeError, UnknownProvider
from ..contract.result import (
    Blocking,
    Claim,
    EditThenContinue,
    LockInfo,
    PlanCounts,
    ProviderLifecycleResult,
    TemplateInfo,
)
from ..settings.records import replace
from . import lakeshore
from .derive import DRIFT_STATUSES, Derived, Observation, derive, drifted
from .intent import Intent
from .paths import ProviderPaths, Root
from .record import read_record
from .vendors import find_template


def observe(
    name: str,
    root: Root,
    dream_dir: str | None,
    *,
    probe: bool = True,
    infra: bool = True,
    claims: bool = True,
    require: bool = True,
    cp: lakeshore.ControlPlane | None = None,
    before: Observation | None = None,
) -> Observation:
    """Read the world for provider ``name``. ``require``: raise UnknownProvider when
    there is no provider.json. ``cp``: the control plane, when the caller resolved it
    once for many providers. ``before``: this run's observation of the provider
    before its verb acted (apply, after terraform's): what the act does not write
    (provider.json, the template, target and gating, the decision scan's answer, the
    control plane) is taken from it; the state, claims and intent record are read again."""
    d = root.provider_dir(name)
    paths = ProviderPaths(d)
    record = before.record if before is not None else read_record(paths.provider_json, dream_dir)
    cp = cp or (before.cp if before is not None else None)
    cp = cp or lakeshore.resolve_control_plane(root.path)
    if record is None:
        if require:
            raise unknown_provider(name, root, dream_dir, cp=cp)
        return Observation(
            name, d, dream_dir, None, None, server=cp.url, namespace=cp.namespace, cp=cp
        )
    import time

    from .intent import read_intent

    if before is not None:
        template, target, gating = before.template, before.target, before.gating
    else:
        from ..lifecycle.gating import effective_gating
        from ..lifecycle.target import read_target

        template = find_template(record.vendor)
        target = read_target(paths, record.backend, dream_dir)
        gating = effective_gating(root.path, record.gating, str(paths.provider_json), template)
    blocking: tuple[Blocking, ...] = ()
    degraded: list[str] = []
    s = before.scanned if before is not None else None
    if template is not None and s is None:
        from ..scan import scan

        try:
            s = scan(paths, template, record.backend, probe=probe)
        except DreamlakeError as exc:
            # The scan does not know the flags this run was given: repeat --dream-dir.
            if isinstance(exc.next_action, EditThenContinue):
                exc.next_action = EditThenContinue(
                    file=exc.next_action.file,
                    command=commands.create_continue(name, dream_dir),
                )
            raise
    if s is not None:
        blocking, degraded = s.blocking, list(s.degraded)
    state = None
    if infra and record.backend != "none":
        from ..backends.base import observe_state

        try:
            state = observe_state(record.backend, d)
        except DreamlakeError as exc:
            # A file to repair, then plan (reads, costs nothing; never apply).
            if isinstance(exc.next_action, EditThenContinue):
                exc.next_action = EditThenContinue(
                    file=exc.next_action.file, command=commands.plan(name, dream_dir)
                )
            raise
    claim: Claim | None = None
    if claims:
        # Only the daemons of this provider's identity: a namesake in another root
        # does not make this one connected.
        claim = lakeshore.fetch_claims(cp, name, identity=record.identity(d))
        if claim is None:
            degraded.extend(lakeshore.unreachable(cp.url))
    return Observation(
        name=name,
        dir=d,
        dream_dir=dream_dir,
        record=record,
        template=template,
        blocking=blocking,
        degraded=tuple(dict.fromkeys(degraded)),
        infra=state,
        claims=claim,
        server=cp.url,
        namespace=cp.namespace,
        target=target,
        gating=gating,
        intent=_foreign(read_intent(d)),
        now=time.time(),
        cp=cp,
        scanned=s,
    )


def with_claims(obs: Observation, root: Root) -> Observation:
    """``obs`` with the control plane's claims, as ``status`` reads them, when it was
    observed without (a verb that did not need them to act still answers the status
    ``status`` would: one world, one story)."""
    if obs.record is None or obs.claims is not None or "no-lakeshore" in obs.degraded:
        return obs
    cp = obs.cp or lakeshore.resolve_control_plane(root.path)
    claim = lakeshore.fetch_claims(cp, obs.name, identity=obs.record.identity(obs.dir))
    degraded = (
        obs.degraded if claim is not None else (*obs.degraded, *lakeshore.unreachable(cp.url))
    )
    return replace(obs, claims=claim, degraded=tuple(dict.fromkeys(degraded)))


def _foreign(intent: Intent | None) -> Intent | None:
    """The record of a verb this very process is running is no news to it (a verb
    that runs another verb, or reads the world again before it returns)."""
    return None if intent is not None and intent.own else intent


def unknown_provider(
    name: str,
    root: Root,
    dream_dir: str | None = None,
    *,
    cp: lakeshore.ControlPlane | None = None,
) -> UnknownProvider:
    """The next action repeats ``--dream-dir``: without it, it would look elsewhere.
    ``cp``: the control plane to ask whether another root owns the name (why a
    ``create`` of it here was refused)."""
    from ..contract.result import Run

    known = root.known_providers()
    where = f"{root.providers} (root chosen by {root.reason})"
    owner = None
    if cp is not None:
        from . import rows

        owner = rows.owner_elsewhere(cp, name)
    if owner is not None:
        # `create -n NAME` here is refused (identity_conflict): not that again
        msg = (
            f"no provider named {name!r} under {where}: the control plane's {name!r} "
            f"belongs to another provider (identity {owner}, another .dream root or "
            f"machine), so creating {name!r} here is refused. Choose another name."
        )
        return UnknownProvider(
            msg, next_action=Run(command=commands.create_help(f"{name}-2", dream_dir))
        )
    if known:
        msg = (
            f"no provider named {name!r} under {where}. Providers there: {', '.join(known)}. "
            f"To create {name!r}, choose its vendor."
        )
    else:
        msg = f"no provider named {name!r} under {where}; there are none yet. Choose its vendor."
    # Never another provider's name, never a vendor nobody chose: the name is kept.
    nxt = Run(command=commands.create_help(name, dream_dir))
    return UnknownProvider(msg, next_action=nxt)


def template_info(obs: Observation) -> TemplateInfo | None:
    if obs.record is None:
        return None
    latest = obs.template.version if obs.template else obs.record.template_version
    return TemplateInfo(
        vendor=obs.record.vendor,
        version=obs.record.template_version,
        latest=latest,
        backend=obs.record.backend,
    )


def to_result(
    obs: Observation,
    derived: Derived | None = None,
    *,
    files: list[str] | None = None,
    plan: PlanCounts | None = None,
    lock: LockInfo | None = None,
    extra_degraded: tuple[str, ...] = (),
    **overrides: object,
) -> ProviderLifecycleResult:
    """The result for ``obs``: ``derived`` (default: ``derive(obs)``) plus what the verb adds."""
    dv = derived or derive(obs)
    infra = obs.infra
    data: dict[str, object] = {
        "status": dv.status,
        "provider": obs.name,
        "vendor": obs.record.vendor if obs.record else None,
        "server": obs.server,
        "namespace": obs.namespace,
        "dir": str(obs.dir),
        "files": files,
        "blocking": list(dv.blocking),
        "plan": plan
        if plan is not None
        else (infra.plan if infra and dv.status == "ready" else None),
        "claim": obs.claims,
        "degraded": list(dict.fromkeys((*obs.degraded, *extra_degraded))),
        "next_action": dv.next_action,
        "lock": lock if lock is not None else (dv.lock or (infra.lock if infra else None)),
        "template": template_info(obs),
        "resources": infra.resources if infra and (infra.present or infra.resources) else None,
        "outputs": infra.outputs if infra and infra.outputs else None,
        "state_note": infra.stale_hint if infra else None,
    }
    if dv.status in DRIFT_STATUSES and drifted(obs) and infra is not None and infra.drift:
        data["drift"] = list(infra.drift.resources)
        data["degraded"] = list(dict.fromkeys((*obs.degraded, "drift", *extra_degraded)))
    if dv.status == "error" and infra is not None and infra.failed_apply is not None:
        data["error"] = partial_apply_message(infra.failed_apply)
        data["kind"] = "partial_apply"
    data.update(overrides)
    res = ProviderLifecycleResult.model_validate(data)
    notes = list(obs.notes) + (list(infra.notes) if infra else [])
    if infra and infra.stale_hint:
        notes.append(infra.stale_hint)
    return res.with_notes(*notes)


def partial_apply_message(left: tuple[str, ...]) -> str:
    shown = ", ".join(left[:8]) + (f" … ({len(left)} in all)" if len(left) > 8 else "")
    return (
        "the last apply failed part-way: "
        + (f"it left {shown}" if left else "it created nothing")
        + " and did not create the rest. Fix the cause, then plan: it shows what is left to do."
    )


def provider_paths(root: Root, name: str) -> ProviderPaths:
    return ProviderPaths(Path(root.provider_dir(name)))
