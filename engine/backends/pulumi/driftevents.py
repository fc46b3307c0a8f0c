"""What drifted, read from the Automation API's engine events of a ``preview
--refresh`` (pure: events in, resources out; read by attribute, so any object of
the ``pulumi.automation`` ``EngineEvent`` shape will do).

The refresh reports one step per resource with op ``refresh``: its metadata's
``old`` state is what the stack recorded, ``new`` what the cloud holds now (none
when the resource is gone). A resource drifted when they differ: the changed
attributes are the step's ``diffs`` when the engine names them, else the outputs
compared key by key. The stack itself and provider resources never drift.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..driftrecord import changed_attributes

_NOT_RESOURCES = ("pulumi:pulumi:Stack", "pulumi:providers:")


@dataclass(frozen=True)
class Drifted:
    """One resource the refresh found changed: its URN, ``update`` or ``delete``, and
    the attributes that changed."""

    address: str
    action: str
    attributes: tuple[str, ...] = ()


def _op(meta: Any) -> str:
    op = getattr(meta, "op", "")
    return str(getattr(op, "value", op))


def _outputs(state: Any) -> Mapping[str, Any] | None:
    out = getattr(state, "outputs", None) if state is not None else None
    return out if isinstance(out, Mapping) else None


def _drifted(meta: Any) -> Drifted | None:
    urn = str(getattr(meta, "urn", "") or "")
    kind = str(getattr(meta, "type", "") or "")
    if not urn or kind.startswith(_NOT_RESOURCES):
        return None
    old, new = getattr(meta, "old", None), getattr(meta, "new", None)
    if old is not None and new is None:
        return Drifted(urn, "delete")
    diffs = tuple(sorted(str(d) for d in getattr(meta, "diffs", None) or ()))
    attrs = diffs or changed_attributes(_outputs(old), _outputs(new))
    return Drifted(urn, "update", attrs) if attrs else None


def refresh_drift(events: Iterable[Any]) -> list[Drifted]:
    """The resources a ``preview --refresh`` found changed, once each, by URN."""
    out: dict[str, Drifted] = {}
    for event in events:
        for attr in ("res_outputs_event", "resource_pre_event"):
            ev = getattr(event, attr, None)
            meta = getattr(ev, "metadata", None) if ev is not None else None
            if meta is None or _op(meta) != "refresh":
                continue
            found = _drifted(meta)
            if found is not None:
                out[found.address] = found  # the outputs event, when there is one, last
    return [out[k] for k in sorted(out)]


__all__ = ["Drifted", "refresh_drift"]
