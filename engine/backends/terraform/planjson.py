"""Counts from ``terraform show -json <planfile>`` (format 0.1 … 1.2), and the same
from the ``plan -json`` stream itself (its ``change_summary`` and ``planned_change``
events), so a plan needs no second process to be counted.

A replace (``["delete","create"]`` or ``["create","delete"]``) counts in both
``add`` and ``destroy``; ``no-op``, ``read`` and ``forget`` count nowhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...contract.result import PlanCounts
from ...settings.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any


def plan_counts(plan: Mapping[str, Any]) -> PlanCounts:
    add = change = destroy = 0
    for rc in plan.get("resource_changes") or []:
        actions = list((rc.get("change") or {}).get("actions") or [])
        if "create" in actions:
            add += 1
        if "delete" in actions:
            destroy += 1
        if "update" in actions:
            change += 1
    return PlanCounts(add=add, change=change, destroy=destroy)


def output_changes(plan: Mapping[str, Any]) -> int:
    """How many root outputs the plan changes (create/update/delete)."""
    n = 0
    for oc in (plan.get("output_changes") or {}).values():
        actions = set((oc or {}).get("actions") or [])
        if actions - {"no-op"}:
            n += 1
    return n


def is_applyable(plan: Mapping[str, Any], counts: PlanCounts | None = None) -> bool:
    """Whether applying the plan would change anything. Uses the ``applyable`` field
    (format 1.2+) and falls back to counting changes."""
    if "applyable" in plan:
        return bool(plan["applyable"])
    c = counts or plan_counts(plan)
    return bool(c.add or c.change or c.destroy or output_changes(plan))


@record(eq=False)  # never compared (statefile.StateFile)
class StreamPlan:
    """What a ``plan -json`` stream says of the plan it saved."""

    counts: PlanCounts
    creates: tuple[str, ...]  # managed instances created (or replaced), by address
    output_changes: int  # root outputs created, updated or deleted (1.x streams name them)


def _managed(resource: Mapping[str, Any]) -> bool:
    return not str(resource.get("resource") or "").startswith("data.")


def stream_plan(messages: Iterable[Mapping[str, Any]]) -> StreamPlan:
    """Counts, created addresses and output changes from a ``plan -json`` stream: the
    last ``change_summary`` (as ``show -json`` counts them), else the
    ``planned_change`` events one by one."""
    summary: Mapping[str, Any] | None = None
    creates: list[str] = []
    add = change = destroy = outputs = 0
    for m in messages:
        kind = m.get("type")
        if kind == "change_summary" and isinstance(m.get("changes"), dict):
            summary = m["changes"]
        elif kind == "planned_change":
            rc = m.get("change") or {}
            action = rc.get("action")
            resource = rc.get("resource") or {}
            add += action in ("create", "replace")
            destroy += action in ("delete", "replace")
            change += action == "update"
            if action in ("create", "replace") and _managed(resource) and resource.get("addr"):
                creates.append(str(resource["addr"]))
        elif kind == "outputs" and isinstance(m.get("outputs"), dict):
            outputs = sum(
                1
                for o in m["outputs"].values()
                if isinstance(o, dict) and o.get("action") not in (None, "noop", "no-op")
            )
    if summary is not None:
        add, change, destroy = (int(summary.get(k) or 0) for k in ("add", "change", "remove"))
    counts = PlanCounts(add=add, change=change, destroy=destroy)
    return StreamPlan(counts, tuple(sorted(creates)), outputs)  # in address order, as show


def is_errored(plan: Mapping[str, Any]) -> bool:
    return bool(plan.get("errored"))
