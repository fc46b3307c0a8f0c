"""Terraform's ``-json`` UI stream mapped onto the engine's progress events.

Pure: one stream message in, the event's type and fields out (or None for a
message that is not progress: version lines, outputs, log lines).
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

# terraform's hook message type -> the engine's event type
_HOOKS = {
    "apply_start": "resource_start",
    "apply_progress": "resource_progress",
    "apply_complete": "resource_done",
    "apply_errored": "resource_failed",
    "provision_start": "resource_progress",
    "provision_progress": "resource_progress",
    "provision_complete": "resource_progress",
    "provision_errored": "resource_failed",
    "refresh_start": "refresh_start",
    "refresh_complete": "refresh_done",
}
_CHANGES = {"planned_change": "resource_planned", "resource_drift": "resource_drift"}


def _addr(payload: Mapping[str, Any]) -> str | None:
    res = payload.get("resource")
    addr = res.get("addr") if isinstance(res, Mapping) else None
    return str(addr) if addr else None


def _message(msg: Mapping[str, Any]) -> str | None:
    text = str(msg.get("@message", "")).strip()
    return text or None


def event_fields(msg: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(event type, fields)`` for one terraform UI message, or None."""
    kind = msg.get("type")
    if kind in _HOOKS:
        hook = msg.get("hook")
        hook = hook if isinstance(hook, Mapping) else {}
        secs = hook.get("elapsed_seconds")
        return _HOOKS[str(kind)], {
            "address": _addr(hook),
            "action": hook.get("action") or hook.get("provisioner"),
            "resource_elapsed": float(secs) if isinstance(secs, int | float) else None,
            "message": _message(msg),
        }
    if kind in _CHANGES:
        change = msg.get("change")
        change = change if isinstance(change, Mapping) else {}
        return _CHANGES[str(kind)], {
            "address": _addr(change),
            "action": change.get("action"),
            "message": _message(msg),
        }
    if kind == "change_summary":
        raw = msg.get("changes")
        raw = raw if isinstance(raw, Mapping) else {}
        counts = {k: int(v) for k, v in raw.items() if isinstance(v, int)}
        op = raw.get("operation")
        return "summary", {
            "changes": counts,
            "step": op if isinstance(op, str) else None,
            "message": _message(msg),
        }
    if kind == "diagnostic" and msg.get("@level") == "error":
        return "diagnostic", {"message": _message(msg)}
    return None


__all__ = ["event_fields"]
