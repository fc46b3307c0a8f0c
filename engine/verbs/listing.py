"""``dreamlake provider list``: every provider under the root, each with its derived
status, vendor, backend, claim count and next command.

Fast by construction: each provider's files and state are read directly (no
subprocess per provider, no account probe), the control plane is resolved once and
asked for all claims in ONE request. A provider whose files are broken is listed
as an ``error`` entry; the others are unaffected.
"""

from __future__ import annotations

from pathlib import Path

from ..contract.errors import DreamlakeError
from ..contract.result import ProviderLifecycleResult
from ..settings.records import replace
from ..world import lakeshore
from ..world.derive import Observation
from ..world.observe import observe, to_result
from ..world.paths import NAME_RE, Root
from ._common import error_result, root_for


def provider_names(root: Root) -> list[str]:
    """Folders under ``.dream/providers`` holding a provider.json, by name: whatever
    that entry is (a FIFO, a folder, a link to a device is listed too, and reads as
    the ``bad_record`` error ``status`` gives it; a dangling link is no record)."""
    try:
        entries = list(root.providers.iterdir())
    except OSError:
        return []
    return sorted(
        p.name for p in entries if NAME_RE.fullmatch(p.name) and (p / "provider.json").exists()
    )


def observe_all(
    root: Root,
    dream_dir: str | None,
    *,
    claims: bool = True,
    names: list[str] | None = None,
    cp: lakeshore.ControlPlane | None = None,
) -> list[Observation | ProviderLifecycleResult]:
    """Every provider's observation (``names``: those only), in name order, the
    claims of all of them asked in ONE request; a provider whose files are broken
    is its error result instead."""
    cp = cp or lakeshore.resolve_control_plane(root.path)
    seen: list[Observation | ProviderLifecycleResult] = []
    for name in provider_names(root) if names is None else names:
        try:
            seen.append(observe(name, root, dream_dir, probe=False, claims=False, cp=cp))
        except DreamlakeError as exc:
            seen.append(error_result(exc, name, root=root, dream_dir=dream_dir))
    observed = [o for o in seen if isinstance(o, Observation)]
    wanted = [(o.name, o.record.identity(o.dir) if o.record else None) for o in observed]
    got = lakeshore.fetch_claims_many(cp, wanted) if claims and wanted else None
    by_name = dict(zip((o.name for o in observed), got or [], strict=False))
    out: list[Observation | ProviderLifecycleResult] = []
    for o in seen:
        if isinstance(o, Observation):
            claim = by_name.get(o.name)
            degraded = (
                o.degraded if claim is not None else (*o.degraded, *lakeshore.unreachable(cp.url))
            )
            o = replace(o, claims=claim, degraded=tuple(dict.fromkeys(degraded)))
        out.append(o)
    return out


def list_providers(
    *, dream_dir: str | None = None, cwd: Path | None = None, claims: bool = True
) -> list[ProviderLifecycleResult]:
    """The results ``status`` would give for every provider, in name order."""
    root = root_for(dream_dir, cwd)
    out: list[ProviderLifecycleResult] = []
    for o in observe_all(root, dream_dir, claims=claims):
        if not isinstance(o, Observation):
            out.append(o)
            continue
        try:
            out.append(to_result(o))
        except (DreamlakeError, ValueError) as exc:
            err = exc if isinstance(exc, DreamlakeError) else DreamlakeError(str(exc))
            out.append(error_result(err, o.name, root=root, dream_dir=dream_dir))
    return out


def list_failure(exc: DreamlakeError, dream_dir: str | None) -> ProviderLifecycleResult:
    """``list`` could not look (a broken ``.dreamrc``): the one failure shape, its
    next action fixing the file at fault (when there is one) and then listing again.
    What ``provider list`` prints instead of the array, and what the MCP tool answers."""
    from ..contract import commands
    from ..contract.result import EditThenContinue, Run
    from ..world.paths import find_root

    again = commands.list_(dream_dir)
    bad = getattr(exc, "path", None)
    nxt = EditThenContinue(file=str(bad), command=again) if bad is not None else Run(command=again)
    res = error_result(exc, "", root=find_root(dream_dir), dream_dir=dream_dir)
    return res.model_copy(update={"next_action": exc.next_action or nxt})


__all__ = ["list_failure", "list_providers", "observe_all", "provider_names"]
