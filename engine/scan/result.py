"""Dispatch the scan to the backend's reader, then let probes fill ``observed``."""

from __future__ import annotations

from ..contract.result import Blocking
from ..settings.records import record
from ..world.paths import ProviderPaths
from ..world.vendors import Template


@record()
class ScanResult:
    """What the offline scan found: blocking decisions and degraded notes."""

    blocking: tuple[Blocking, ...] = ()
    degraded: tuple[str, ...] = ()


def _read(paths: ProviderPaths, template: Template, backend: str) -> list[Blocking]:
    if backend == "pulumi":
        from .pulumi import scan_pulumi

        return scan_pulumi(paths, template)
    if backend == "none":
        from .adopt import scan_adopt

        return scan_adopt(paths, template)
    from .cache import remembered

    def compute() -> list[Blocking]:
        from .terraform import scan_terraform

        return scan_terraform(paths, template)

    return remembered(paths, template, compute)


def scan(
    paths: ProviderPaths, template: Template, backend: str, *, probe: bool = True
) -> ScanResult:
    blocking = _read(paths, template, backend)
    # Only a blocking decision with a probe wants one; nothing to hint, nothing degraded.
    needed = {
        d.probe for d in template.decisions if d.probe and any(b.key == d.key for b in blocking)
    }
    if not needed:
        return ScanResult(tuple(blocking), ())
    if not probe:
        return ScanResult(tuple(blocking), ("no-probe",))
    from ..probes import run_probes

    observed, degraded = run_probes(needed, paths)
    out = []
    for b in blocking:
        d = template.decision(b.key)
        if d and d.probe and d.probe in observed:
            out.append(replace_blocking(b, observed[d.probe]))
        else:
            out.append(b)
    return ScanResult(tuple(out), tuple(degraded))


def replace_blocking(b: Blocking, observed: list[str]) -> Blocking:
    return b.model_copy(update={"observed": list(observed)})


__all__ = ["ScanResult", "scan"]
