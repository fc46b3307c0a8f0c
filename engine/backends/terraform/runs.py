"""What terraform's plan, apply and destroy runs share: the stdout line feed into
progress, the state lock's diagnostic and file, and the files a run wrote."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ...backends.base import Progress
from ...contract import events
from . import uijson
from .location import state_location
from .lockinfo import lock_info_path

# the summary of terraform's diagnostic when another run holds the state lock
LOCK_SUMMARY = "Error acquiring the state lock"


def feed(progress: Progress | None) -> Callable[[str], None] | None:
    """A stdout line handler that hands each resource event's prose to ``progress``
    and its structured form to the progress-event sink, when there is one."""
    emitting = events.active()
    if progress is None and not emitting:
        return None

    def on_line(line: str) -> None:
        msg = uijson.parse_line(line)
        if msg is None:
            return
        if emitting:
            from . import uievents  # a progress-event sink is installed

            mapped = uievents.event_fields(msg)
            if mapped is not None:
                events.emit(mapped[0], **mapped[1])  # type: ignore[arg-type]
        text = uijson.progress_message(msg) if progress is not None else None
        if text and progress is not None:
            progress(text)

    return on_line


def lock_path(tf: Path) -> Path:
    """The lock-info file beside the state of the configuration in ``tf``."""
    return lock_info_path(state_location(tf).path)


def mtime(p: Path) -> float | None:
    """``p``'s modification time in nanoseconds, None when it does not exist."""
    try:
        return p.stat().st_mtime_ns
    except OSError:
        return None
