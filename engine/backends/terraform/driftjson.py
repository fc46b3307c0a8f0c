"""What drifted, read from terraform's machine output (pure: data in, data out).

Two readers, the same on terraform 1.0 and every later version:

* the ``plan -refresh-only -json`` stream: one ``resource_drift`` message per
  managed resource whose real state moved from the state terraform recorded
  (``change.resource.addr``, ``change.action``: ``update`` changed outside,
  ``delete`` gone);
* ``show -json`` of that saved plan: its ``resource_drift`` array carries each
  resource's ``before`` and ``after``, from which the changed attributes are named.

Attribute *names* only: values (and which of them are sensitive) never leave here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..driftrecord import changed_attributes


@dataclass(frozen=True)
class Drifted:
    """One resource that drifted: its address, what the refresh found, and the
    attributes that changed (empty when only the stream was read)."""

    address: str
    action: str | None
    attributes: tuple[str, ...] = ()


def _managed(resource: Mapping[str, Any]) -> bool:
    mode = resource.get("mode")
    if mode is not None:
        return mode == "managed"
    return not str(resource.get("resource") or resource.get("addr") or "").startswith("data.")


def stream_drift(messages: Iterable[Mapping[str, Any]]) -> list[Drifted]:
    """The ``resource_drift`` messages of a ``plan -json`` stream, in order, once each."""
    out: dict[str, Drifted] = {}
    for m in messages:
        if m.get("type") != "resource_drift":
            continue
        change = m.get("change")
        change = change if isinstance(change, Mapping) else {}
        res = change.get("resource")
        res = res if isinstance(res, Mapping) else {}
        addr = res.get("addr")
        if not addr or not _managed(res):
            continue
        action = change.get("action")
        out[str(addr)] = Drifted(str(addr), str(action) if action else None)
    return list(out.values())


def plan_drift(plan: Mapping[str, Any]) -> list[Drifted]:
    """The ``resource_drift`` array of ``show -json <saved plan>`` (format 0.2 and
    later): each managed resource with its action and changed attributes."""
    out: list[Drifted] = []
    for rd in plan.get("resource_drift") or []:
        if not isinstance(rd, Mapping) or not rd.get("address") or not _managed(rd):
            continue
        change = rd.get("change")
        change = change if isinstance(change, Mapping) else {}
        actions = [str(a) for a in change.get("actions") or [] if a != "no-op"]
        if not actions:
            continue
        action = "delete" if "delete" in actions and "create" not in actions else actions[-1]
        attrs = changed_attributes(change.get("before"), change.get("after"))
        out.append(Drifted(str(rd["address"]), action, attrs))
    return out


def merge(streamed: Iterable[Drifted], shown: Iterable[Drifted]) -> list[Drifted]:
    """The stream's resources, each with the attributes ``show`` named for it (and
    any resource only ``show`` named), in address order."""
    detail = {d.address: d for d in shown}
    out = {d.address: detail.get(d.address, d) for d in streamed}
    for addr, d in detail.items():
        out.setdefault(addr, d)
    return [out[a] for a in sorted(out)]


__all__ = ["Drifted", "changed_attributes", "merge", "plan_drift", "stream_drift"]
