"""Progress events: what a verb is doing while it runs, one event at a time.

The verbs and backends call :func:`emit` (or :func:`step`) at the points worth
reporting; nothing happens unless a caller installed a sink with
:func:`recording` — the CLI's ``--events`` (NDJSON on stderr), its live view for a
person at a terminal, or the MCP server's progress notifications. Each event
carries a type, the verb and provider, a sequence number, the seconds elapsed
since the verb started and, for resource-level work, the resource's address.

The sink lives in a context variable, so concurrent verbs (threads of the MCP
server) each report to their own sink. ``dreamlake schema --events`` prints the
JSON Schema of :class:`ProgressEvent`; a test snapshots it like the result schema.
The model (pydantic) is in ``event_model`` and loads with the first event: a verb
run with no sink never imports it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

    from .event_model import ProgressEvent
    from .event_types import EVENT_TYPES, EventType

Sink = Callable[["ProgressEvent"], None]


class Recorder:
    """Numbers and times the events of one verb and hands them to a sink."""

    def __init__(self, sink: Sink, *, verb: str, provider: str) -> None:
        self.sink = sink
        self.verb = verb
        self.provider = provider
        self.started = time.monotonic()
        self._seq = 0
        self._lock = threading.Lock()
        self._broken = False

    def emit(self, type: EventType, **fields: Any) -> ProgressEvent | None:
        from .event_model import ProgressEvent

        with self._lock:
            self._seq += 1
            event = ProgressEvent(
                type=type,
                seq=self._seq,
                elapsed=round(time.monotonic() - self.started, 3),
                verb=self.verb,
                provider=self.provider,
                **{k: v for k, v in fields.items() if v is not None},
            )
            if self._broken:
                return event
            try:
                self.sink(event)
            except Exception:  # a closed pipe or a gone client never fails the verb
                self._broken = True
            return event


_current: ContextVar[Recorder | None] = ContextVar("dreamlake_progress_events", default=None)


@contextlib.contextmanager
def recording(sink: Sink, *, verb: str, provider: str) -> Iterator[Recorder]:
    """Send the events of the verb run inside this block to ``sink``; a ``start``
    event first. The caller emits ``end`` (it knows the result's status)."""
    rec = Recorder(sink, verb=verb, provider=provider)
    token = _current.set(rec)
    try:
        rec.emit("start", message=f"{verb} {provider}")
        yield rec
    finally:
        _current.reset(token)


def current() -> Recorder | None:
    """The current context's recorder: for a backend whose tool reports from a thread
    of its own (the Automation API's event watcher), to capture before it starts."""
    return _current.get()


def active() -> bool:
    """True while a sink is installed for the current context."""
    return _current.get() is not None


def emit(type: EventType, **fields: Any) -> None:
    """Report one event to the current sink; nothing when there is none."""
    rec = _current.get()
    if rec is not None:
        rec.emit(type, **fields)


def step(name: str, message: str | None = None, **fields: Any) -> None:
    """A named phase of the verb began."""
    emit("step", step=name, message=message or name, **fields)


__all__ = [
    "EVENT_TYPES",
    "EventType",
    "ProgressEvent",
    "Recorder",
    "Sink",
    "active",
    "current",
    "emit",
    "json_schema",
    "recording",
    "step",
]


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one event, as ``dreamlake schema --events`` prints it."""
    from .event_model import ProgressEvent

    return ProgressEvent.model_json_schema(by_alias=True, mode="serialization")


def __getattr__(name: str) -> Any:
    """The event's model, and its kinds (``event_types``, which imports ``typing``),
    loaded where they are asked for: a verb run without a sink reads neither."""
    if name == "ProgressEvent":
        from .event_model import ProgressEvent

        return ProgressEvent
    if name in ("EVENT_TYPES", "EventType"):
        from . import event_types

        return getattr(event_types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
