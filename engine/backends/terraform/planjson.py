"""Counts from ``terraform show -json <planfile>`` (format 0.1 … 1.2).

A replace (``["delete","create"]`` or ``["create","delete"]``) counts in both
``add`` and ``destroy``; ``no-op``, ``read`` and ``forget`` count nowhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...contract.result import PlanCounts


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


def is_errored(plan: Mapping[str, Any]) -> bool:
    return bool(plan.get("errored"))
