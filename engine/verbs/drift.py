"""``dreamlake provider drift``: ask the backend, once, whether the world moved.

A refresh that writes no state (terraform ``plan -refresh-only``, Pulumi ``preview
--refresh``). What drifted is recorded beside the provider's plan record and read
back by every verb: an ``applied``, ``unclaimed`` or ``connected`` provider with a
live drift record has ``"drift"`` in ``degraded``, a ``drift`` member and ``plan``
as its next action. A provider with nothing applied has nothing to drift from: the
check does not run. Nothing runs over a verb in flight or interrupted either
(``applying``: its recovery comes first).
"""

from __future__ import annotations

from pathlib import Path

from ..backends.base import Progress
from ..contract import commands
from ..contract.errors import BackendError, DreamlakeError, UsageError
from ..contract.result import LockInfo, ProviderLifecycleResult, Run
from ..settings.records import replace
from ..world.derive import Observation
from ..world.observe import observe, to_result, with_claims
from ..world.paths import Root, check_name
from ._common import error_result, root_for


def drift(
    name: str,
    *,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    progress: Progress | None = None,
) -> ProviderLifecycleResult:
    """Run the drift check for ``name`` once and return its status with what drifted."""
    root = root_for(dream_dir, cwd)
    try:
        check_name(name)
        obs = observe(name, root, dream_dir, claims=False)
    except DreamlakeError as exc:
        return error_result(exc, name, root=root, dream_dir=dream_dir)
    from .plan import failure

    try:
        return _drift(obs, root, progress)
    except DreamlakeError as exc:
        return failure(obs, root, exc)


def _drift(obs: Observation, root: Root, progress: Progress | None) -> ProviderLifecycleResult:
    if obs.adopt:
        raise UsageError(
            f"'{obs.name}' adopts an existing host: there is no infrastructure state to "
            "compare with the world",
            next_action=Run(command=commands.connect(obs.name, obs.dream_dir)),
        )
    from ._busy import busy, may_act

    if not may_act(obs, "drift"):
        return busy(obs, "drift")
    if obs.infra is None or not obs.infra.present:
        return to_result(with_claims(obs, root)).with_notes(
            "drift not checked: nothing is applied, so nothing can have drifted"
        )
    from ..backends.base import check_drift, observe_state

    try:
        record = check_drift(obs.backend, obs.dir, progress=progress)
    except BackendError as exc:
        lock = getattr(exc, "lock", None)
        if isinstance(lock, LockInfo):
            from ._busy import with_lock

            return busy(with_lock(obs, lock), "drift")
        raise
    after = with_claims(replace(obs, infra=observe_state(obs.backend, obs.dir)), root)
    files = [record.path] if record.path else []
    n = len(record.resources)
    if n:
        said = (
            f"drift: {n} resource{'s' if n != 1 else ''} changed outside since the state was "
            f"written (seen {record.seen_at}); plan shows what an apply would put back"
        )
    else:
        said = f"no drift: the infrastructure matches its state (checked {record.seen_at})"
    return to_result(after, files=files).with_notes(said)


__all__ = ["drift"]
