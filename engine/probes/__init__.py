"""Account probes: best-effort hints that fill ``Blocking.observed``.

``run_probes(names, paths)`` returns ``({probe: values}, degraded)``. A probe whose
credentials are absent yields nothing and adds ``"no-probe"`` to degraded; a probe
never fails a command. Cloud SDKs are imported lazily inside the probe.
"""

from __future__ import annotations

from ..paths import ProviderPaths


def run_probes(names: set[str], paths: ProviderPaths) -> tuple[dict[str, list[str]], list[str]]:
    # Filled in by the probes module (AWS regions in use first).
    return {}, (["no-probe"] if names else [])
