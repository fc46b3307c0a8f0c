"""``dreamlake provider status``: recomputed from the world on every run."""

from __future__ import annotations

from pathlib import Path

from ..contract import commands
from ..contract.errors import DreamlakeError
from ..contract.result import ProviderLifecycleResult
from ..settings.records import replace
from ..world.derive import Observation
from ..world.observe import observe, to_result
from ..world.paths import check_name
from ._common import error_result, root_for


def status(
    name: str, *, dream_dir: str | None = None, cwd: Path | None = None, probe: bool = True
) -> ProviderLifecycleResult:
    root = root_for(dream_dir, cwd)
    try:
        check_name(name)  # a name is a folder under .dream/providers: never a path
        obs = observe(name, root, dream_dir, probe=probe)
    except DreamlakeError as exc:
        return error_result(exc, name, root=root, dream_dir=dream_dir)
    res = status_of(obs)
    _drift_events(res)
    t = res.template
    if t and t.latest > t.version:
        res.with_notes(
            f"template: {t.vendor} v{t.version} (v{t.latest} available) — files are never edited "
            f"under you; scaffold v{t.latest} beside it to compare: "
            f"{commands.create(name + f'-v{t.latest}', t.vendor, dream_dir, t.backend)}"
        )
    return res


def status_of(obs: Observation) -> ProviderLifecycleResult:
    """The status of an observed provider: its daemon's supervisor asked (the host
    says, as it told connect), then derived. What ``status`` and the watcher answer."""
    from ..daemon.probe import observe_supervisor

    sup, host, deg = observe_supervisor(obs)
    if sup is not None:
        obs = replace(obs, daemon="running")  # a daemon that has not claimed yet is starting
    res = to_result(obs, extra_degraded=deg)
    if sup is not None:
        res = res.model_copy(update={"supervisor": sup, "host": host})
    return res


def _drift_events(res: ProviderLifecycleResult) -> None:
    """One ``resource_drift`` progress event per resource the drift record names, as
    the check itself reported them (``--events``); read from the record, nothing run."""
    from ..contract import events

    if not res.drift or not events.active():
        return
    for d in res.drift:
        attrs = f": {', '.join(d.attributes)}" if d.attributes else ""
        events.emit(
            "resource_drift",
            address=d.address,
            action=d.action,
            message=f"{d.address}: drift seen {d.seen_at} ({d.action or 'changed'}{attrs})",
        )
