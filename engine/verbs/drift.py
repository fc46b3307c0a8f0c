"""``dreamlake provider drift``: ask the backend, once, whether the world moved.

A refresh-only look (terraform ``plan -refresh-only``, Pulumi ``preview
--refresh``) that never writes state. What drifted is recorded beside the
provider's plan record and read back by every verb: an ``applied`` or
``connected`` provider with a live drift record has ``"drift"`` in ``degraded``,
a ``drift`` member and ``plan`` as its next action.
"""

from __future__ import annotations

from pathlib import Path

from ..backends.base import Progress
from ..contract.errors import DreamlakeError
from ..contract.result import ProviderLifecycleResult
from ..world.observe import observe, to_result
from ..world.paths import check_name
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
        obs = observe(name, root, dream_dir)
    except DreamlakeError as exc:
        return error_result(exc, name, root=root, dream_dir=dream_dir)
    return to_result(obs)


__all__ = ["drift"]
