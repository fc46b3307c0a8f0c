"""Progress lines from the Automation API's engine events (``on_event``), not from
the CLI's display text.

One line per step the engine starts and finishes, one per warning or error
diagnostic, and the summary. Steps that change nothing (``same``, ``read``) are
left out, so a preview of an unchanged stack prints only its summary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base import Progress

_QUIET = {"same", "read", "refresh"}
_DONE = {
    "create": "created",
    "update": "updated",
    "delete": "deleted",
    "replace": "replaced",
    "create-replacement": "created replacement of",
    "delete-replaced": "deleted the replaced",
    "import": "imported",
    "discard": "discarded",
}


def _op(metadata: Any) -> str:
    op = getattr(metadata, "op", "")
    return str(getattr(op, "value", op))


def _what(metadata: Any) -> str:
    urn = str(getattr(metadata, "urn", "") or "")
    name = urn.rsplit("::", 1)[-1] if "::" in urn else urn
    return f"{getattr(metadata, 'type', '?')} {name}".strip()


def progress_line(event: Any) -> str | None:
    """The line an ``EngineEvent`` is worth, or None."""
    pre = getattr(event, "resource_pre_event", None)
    if pre is not None and pre.metadata is not None:
        op = _op(pre.metadata)
        if op in _QUIET:
            return None
        if getattr(pre, "planning", False):
            return f"would {op} {_what(pre.metadata)}"
        return f"{op} … {_what(pre.metadata)}"
    out = getattr(event, "res_outputs_event", None)
    if out is not None and out.metadata is not None:
        op = _op(out.metadata)
        if op in _QUIET or getattr(out, "planning", False):
            return None
        return f"{_DONE.get(op, op)} {_what(out.metadata)}"
    failed = getattr(event, "res_op_failed_event", None)
    if failed is not None and failed.metadata is not None:
        return f"failed to {_op(failed.metadata)} {_what(failed.metadata)}"
    diag = getattr(event, "diagnostic_event", None)
    if diag is not None and str(getattr(diag, "severity", "")) in ("warning", "error"):
        message = " ".join(str(diag.message or "").split())
        return f"{diag.severity}: {message}" if message else None
    summary = getattr(event, "summary_event", None)
    if summary is not None:
        changes = {str(k): int(v) for k, v in dict(summary.resource_changes or {}).items()}
        shown = ", ".join(f"{v} {k}" for k, v in sorted(changes.items()) if v)
        return f"done in {summary.duration_seconds}s" + (f": {shown}" if shown else "")
    return None


def on_event(progress: Progress | None) -> Callable[[Any], None] | None:
    """An ``on_event`` callback feeding ``progress`` (None when nobody listens)."""
    if progress is None:
        return None
    say = progress

    def handle(event: Any) -> None:
        line = progress_line(event)
        if line:
            say(line)

    return handle
