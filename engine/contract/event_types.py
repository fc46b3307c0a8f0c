"""The kinds of progress event (shared by :mod:`.events` and :mod:`.event_model`)."""

from __future__ import annotations

from typing import Literal

EventType = Literal[
    "start",
    "step",
    "resource_planned",
    "resource_start",
    "resource_progress",
    "resource_done",
    "resource_failed",
    "refresh_start",
    "refresh_done",
    "resource_drift",
    "summary",
    "diagnostic",
    "end",
]
"""``start`` / ``end`` bracket one verb (``end`` carries the result's status);
``step`` names a phase (terraform ``init`` / ``validate`` / ``plan`` / ``apply``,
pulumi ``preview`` / ``up``, connect's ``connect`` / ``build`` / ``upload`` /
``install`` / ``start`` / ``wait``); the ``resource_*`` and ``refresh_*`` events
follow one resource through plan and apply; ``summary`` carries the change counts;
``diagnostic`` an error message."""

EVENT_TYPES: tuple[str, ...] = EventType.__args__  # type: ignore[attr-defined]


__all__ = ["EVENT_TYPES", "EventType"]
