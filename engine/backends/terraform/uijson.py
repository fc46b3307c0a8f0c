"""Terraform's machine-readable UI stream (``plan -json`` / ``apply -json``): one
JSON object per line with ``type``, ``@level``, ``@message`` and a payload.

Readers here are pure: they take lines and return plain data.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from ...settings.records import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

# Event types worth one progress line each (resource-level work and the summary).
PROGRESS_TYPES = frozenset(
    {
        "apply_start",
        "apply_progress",
        "apply_complete",
        "apply_errored",
        "provision_start",
        "provision_complete",
        "provision_errored",
        "refresh_start",
        "refresh_complete",
        "planned_change",
        "resource_drift",
        "change_summary",
    }
)


def parse_line(line: str) -> dict[str, Any] | None:
    """One stream line as a dict, or None for a line that is not a JSON object."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def parse_stream(text: str | Iterable[str]) -> list[dict[str, Any]]:
    lines = text.splitlines() if isinstance(text, str) else text
    return [m for m in (parse_line(ln) for ln in lines) if m is not None]


def progress_message(msg: Mapping[str, Any]) -> str | None:
    """The human line for one event, or None when it is not a progress event."""
    kind = msg.get("type")
    if kind in PROGRESS_TYPES:
        return str(msg.get("@message", "")).strip() or None
    if kind == "diagnostic" and msg.get("@level") == "error":
        return str(msg.get("@message", "")).strip() or None
    return None


def error_diagnostics(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``diagnostic`` payloads of every error-level diagnostic event."""
    out = []
    for m in messages:
        if m.get("type") != "diagnostic":
            continue
        d = m.get("diagnostic")
        if isinstance(d, dict) and (d.get("severity") == "error" or m.get("@level") == "error"):
            out.append(d)
    return out


def diagnostic_text(d: Mapping[str, Any]) -> str:
    """``summary: first line of detail (file:line)``."""
    summary = str(d.get("summary", "")).strip()
    detail = str(d.get("detail", "") or "").strip().split("\n", 1)[0].strip()
    rng = d.get("range")
    where = ""
    if isinstance(rng, dict) and rng.get("filename"):
        start = rng.get("start") or {}
        where = f" ({rng['filename']}:{start.get('line', '?')})"
    text = summary + (f": {detail}" if detail else "")
    return text + where


@record(eq=False)  # never compared (statefile.StateFile)
class StreamSummary:
    """What one ``-json`` run reported."""

    version: str | None = None
    changes: dict[str, int] | None = None  # the last change_summary: add/change/remove/import
    operation: str | None = None
    outputs: dict[str, Any] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)  # addresses with apply_complete
    errored: list[str] = field(default_factory=list)  # addresses with apply_errored


def summarize(messages: Iterable[Mapping[str, Any]]) -> StreamSummary:
    version = operation = None
    changes: dict[str, int] | None = None
    outputs: dict[str, Any] = {}
    applied: list[str] = []
    errored: list[str] = []
    msgs = list(messages)
    for m in msgs:
        kind = m.get("type")
        if kind == "version":
            version = m.get("terraform")
        elif kind == "change_summary" and isinstance(m.get("changes"), dict):
            c = m["changes"]
            operation = c.get("operation")
            changes = {k: int(v) for k, v in c.items() if isinstance(v, int)}
        elif kind == "outputs" and isinstance(m.get("outputs"), dict):
            outputs = dict(m["outputs"])
        elif kind in ("apply_complete", "apply_errored"):
            hook = m.get("hook") or {}
            addr = (hook.get("resource") or {}).get("addr")
            if addr:
                (applied if kind == "apply_complete" else errored).append(addr)
    return StreamSummary(
        version=version,
        changes=changes,
        operation=operation,
        outputs=outputs,
        errors=error_diagnostics(msgs),
        applied=applied,
        errored=errored,
    )
