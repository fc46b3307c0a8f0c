"""The Automation API's engine events mapped onto the engine's progress events.

Pure: one ``pulumi.automation`` ``EngineEvent`` (read by attribute, so any object of
that shape will do) in, the event's type and fields out, or None. A resource's
address is its URN. Steps that change nothing (``same``) are not reported.
"""

from __future__ import annotations

from typing import Any


def _op(meta: Any) -> str | None:
    op = getattr(meta, "op", None)
    op = getattr(op, "value", op)
    return str(op) if op else None


def event_fields(
    event: Any, *, preview: bool, step: str | None = None
) -> tuple[str, dict[str, Any]] | None:
    """``(event type, fields)`` for one engine event of a preview or an up (``step``:
    the operation the summary names, ``preview`` / ``up`` / ``refresh`` / ``destroy``;
    by default that of ``preview``)."""
    step = step or ("preview" if preview else "up")
    for attr, kind in (
        ("resource_pre_event", "resource_planned" if preview else "resource_start"),
        ("res_outputs_event", None if preview else "resource_done"),
        ("res_op_failed_event", "resource_failed"),
    ):
        ev = getattr(event, attr, None)
        if ev is None:
            continue
        meta = getattr(ev, "metadata", None)
        op = _op(meta)
        if kind is None or op == "same":
            return None
        urn = getattr(meta, "urn", None)
        return kind, {
            "address": str(urn) if urn else None,
            "action": op,
            "message": f"{urn}: {op}" if urn and op else None,
        }
    diag = getattr(event, "diagnostic_event", None)
    if diag is not None and str(getattr(diag, "severity", "")).startswith("error"):
        return "diagnostic", {"message": str(getattr(diag, "message", "")).strip() or None}
    summary = getattr(event, "summary_event", None)
    if summary is not None:
        raw = dict(getattr(summary, "resource_changes", None) or {})
        ops = {str(getattr(k, "value", k)): int(v) for k, v in raw.items()}
        counts = summary_counts(ops)
        said = ", ".join(f"{counts[k]} to {k}" for k in ("add", "change", "remove"))
        return "summary", {"changes": counts, "step": step, "message": f"{step}: {said}"}
    return None


def summary_counts(ops: dict[str, int]) -> dict[str, int]:
    """Pulumi's counts by operation as the summary event's kinds, the terraform
    backend's (``add``, ``change``, ``remove``, ``import``): a replace adds one and
    removes one; ``same``, ``read``, ``refresh`` and the steps of a replace are no
    change."""
    return {
        "add": ops.get("create", 0) + ops.get("replace", 0),
        "change": ops.get("update", 0),
        "remove": ops.get("delete", 0) + ops.get("replace", 0) + ops.get("discard", 0),
        "import": ops.get("import", 0),
    }


__all__ = ["event_fields", "summary_counts"]
