"""The drift record: what the last drift check found, kept beside the provider's plan
record (``terraform/tfplan.drift.json``, ``pulumi/drift.plan.json``).

It names the state it was taken against (terraform's serial and lineage, the pulumi
checkpoint's digest): a record whose state is not the current one is older than the
state (an apply, a refresh or a destroy ran since) and is dropped — ignored, and
removed. Reading it is a file read, never a tool run: ``status`` reads it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..contract.result import DriftedResource

DRIFT_FORMAT = 1


@dataclass(frozen=True)
class DriftRecord:
    """One drift check: when it ran, against which state, and what moved."""

    backend: str
    seen_at: str
    state: dict[str, Any]
    resources: tuple[DriftedResource, ...] = ()
    tool_version: str | None = None
    path: str = ""  # where it was read from (not written)

    @property
    def drifted(self) -> bool:
        return bool(self.resources)

    def to_json(self) -> str:
        data = {
            "format": DRIFT_FORMAT,
            "backend": self.backend,
            "seenAt": self.seen_at,
            "toolVersion": self.tool_version,
            "state": self.state,
            "resources": [
                {"address": r.address, "action": r.action, "attributes": list(r.attributes)}
                for r in self.resources
            ],
        }
        return json.dumps(data, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> DriftRecord:
        from ..settings.readers import loads_json

        data = loads_json(text)
        if not isinstance(data, dict) or data.get("format") != DRIFT_FORMAT:
            raise ValueError("unknown drift record format")
        seen = str(data["seenAt"])
        resources = tuple(
            DriftedResource(
                address=str(r["address"]),
                action=str(r["action"]) if r.get("action") else None,
                attributes=[str(a) for a in r.get("attributes") or ()],
                seen_at=seen,
            )
            for r in data.get("resources") or ()
        )
        state = data.get("state")
        if not isinstance(state, dict):
            raise ValueError("a drift record names the state it was taken against")
        version = data.get("toolVersion")
        return cls(
            backend=str(data["backend"]),
            seen_at=seen,
            state=state,
            resources=resources,
            tool_version=str(version) if version else None,
        )


def changed_attributes(before: Any, after: Any) -> tuple[str, ...]:
    """The top-level attributes whose values differ; a map attribute (tags, labels)
    names its changed keys too (``tags.team``). Sorted."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return ()
    names: list[str] = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        if b == a:
            continue
        if isinstance(b, Mapping | None) and isinstance(a, Mapping | None) and (b or a):
            inner = dict(b or {}), dict(a or {})
            keys = sorted(
                k for k in set(inner[0]) | set(inner[1]) if inner[0].get(k) != inner[1].get(k)
            )
            if keys and all(not isinstance(v, Mapping | list) for d in inner for v in d.values()):
                names.extend(f"{key}.{k}" for k in keys)
                continue
        names.append(str(key))
    return tuple(names)


def write_drift(path: Path, record: DriftRecord) -> DriftRecord:
    """Write ``record`` at ``path`` atomically (a reader sees the old one or this one);
    the record, with its ``path``."""
    from ..settings.fsutil import atomic_write

    atomic_write(path, record.to_json())
    return replace(record, path=str(path))


def read_drift(path: Path) -> DriftRecord | None:
    """The record at ``path``, or None (absent, or not a drift record)."""
    from ..settings.readers import read_text

    try:
        return DriftRecord.from_json(read_text(path))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def live_drift(path: Path, state: Mapping[str, Any]) -> DriftRecord | None:
    """The record at ``path`` when it was taken against ``state`` (the current one).
    A record of another state is older than it: removed, and None; so is one that is
    not a drift record."""
    if not path.exists():  # the common case: one stat, nothing read
        return None
    record = read_drift(path)
    if record is not None and record.state == dict(state):
        return replace(record, path=str(path))
    import contextlib

    with contextlib.suppress(OSError):  # a folder this run may not write: ignored all the same
        path.unlink(missing_ok=True)
    return None


__all__ = [
    "DRIFT_FORMAT",
    "DriftRecord",
    "changed_attributes",
    "live_drift",
    "read_drift",
    "write_drift",
]
