"""Where a running verb's progress goes, chosen once per run.

* ``--events``: every progress event as one JSON line on stderr (NDJSON); the
  result on stdout is unchanged.
* prose on a terminal: a live view on stderr — the step, the resources in flight
  with their elapsed time, done/total — redrawn a few times a second (rich,
  imported only here and only then); finished resources stay as plain lines.
* prose elsewhere (a pipe, a log): the plain progress lines the verbs already print.
* ``--json`` without ``--events``: nothing at all.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from dreamlake.engine.contract import events
from dreamlake.engine.contract.events import ProgressEvent, Recorder


class NdjsonSink:
    """One event per line on a text stream (stderr), flushed as it happens."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self._lock = threading.Lock()

    def __call__(self, event: ProgressEvent) -> None:
        with self._lock:
            self.stream.write(event.to_json() + "\n")
            self.stream.flush()


_DONE_WORDS = {
    "create": "created",
    "update": "updated",
    "delete": "destroyed",
    "replace": "replaced",
    "read": "read",
}
_DOING_WORDS = {
    "create": "creating",
    "update": "updating",
    "delete": "destroying",
    "replace": "replacing",
    "read": "reading",
}


def _secs(s: float) -> str:
    if s < 60:
        return f"{s:.1f}s"
    m, s = divmod(int(s), 60)
    return f"{m}m{s:02d}s"


class LiveState:
    """What the live view shows, folded from the events (no terminal code here)."""

    def __init__(self, verb: str, provider: str) -> None:
        self.verb = verb
        self.provider = provider
        self.started = time.monotonic()
        self.step: str | None = None
        self.step_started = self.started
        self.in_flight: dict[str, tuple[str, float]] = {}  # address -> (action, since)
        self.planned: set[str] = set()
        self.done = 0
        self.failed = 0
        self.total: int | None = None
        self._lock = threading.Lock()

    def fold(self, event: ProgressEvent) -> str | None:
        """Take one event; return a line to keep above the live region, if any."""
        now = time.monotonic()
        with self._lock:
            addr = event.address
            if event.type == "step":
                self.step = event.message or event.step
                self.step_started = now
                if event.total is not None:
                    self.total = event.total
                return f"· {self.step}"
            if event.type in ("resource_start", "refresh_start") and addr:
                verb = "refresh" if event.type == "refresh_start" else (event.action or "")
                self.in_flight.setdefault(addr, (verb, now))
                return None
            if event.type == "resource_planned" and addr:
                self.planned.add(addr)
                return None
            if event.type in ("resource_done", "refresh_done", "resource_failed") and addr:
                action, since = self.in_flight.pop(addr, (event.action or "", now))
                took = event.resource_elapsed if event.resource_elapsed is not None else now - since
                if event.type == "refresh_done":
                    return None
                if event.type == "resource_failed":
                    self.failed += 1
                    return f"✗ {addr} failed after {_secs(took)}"
                self.done += 1
                word = _DONE_WORDS.get(action or event.action or "", "done")
                return f"✓ {addr} {word} ({_secs(took)})"
            if event.type == "diagnostic" and event.message:
                return f"✗ {event.message}"
            if event.type == "summary" and event.message:
                return f"· {event.message}"
            return None

    def lines(self) -> list[str]:
        now = time.monotonic()
        with self._lock:
            total = self.total if self.total is not None else (len(self.planned) or None)
            count = f"{self.done}/{total} done" if total else f"{self.done} done"
            head = f"{self.verb} {self.provider}  {_secs(now - self.started)}  {count}"
            if self.failed:
                head += f", {self.failed} failed"
            out = [head]
            if self.step:
                out.append(f"  {self.step}  {_secs(now - self.step_started)}")
            for addr, (action, since) in sorted(self.in_flight.items(), key=lambda kv: kv[1][1]):
                doing = _DOING_WORDS.get(action, action or "working on")
                out.append(f"    {doing} {addr}  {_secs(now - since)}")
            return out


class LiveView:
    """The live region on stderr (rich), fed by events."""

    def __init__(self, verb: str, provider: str) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        self._text = Text
        self.state = LiveState(verb, provider)
        self.console = Console(file=sys.stderr)
        self.live = Live(
            console=self.console,
            get_renderable=self._render,
            refresh_per_second=4,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def _render(self) -> Any:
        return self._text("\n".join(self.state.lines()))

    def __call__(self, event: ProgressEvent) -> None:
        line = self.state.fold(event)
        if line:
            self.live.console.print(line, markup=False, highlight=False)

    def __enter__(self) -> LiveView:
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.stop()


QUICK_VERBS = frozenset({"status", "create", "list"})
"""Verbs that read and answer at once: no live view to draw (nor rich to import)."""


def wants_live(as_json: bool, *streams: Any) -> bool:
    """A person at a terminal: prose mode, stdout and stderr (where the view is drawn)
    both a TTY, a terminal that can redraw."""
    if as_json or os.environ.get("TERM") == "dumb" or os.environ.get("DREAMLAKE_NO_LIVE"):
        return False
    try:
        return all(bool(s.isatty()) for s in (streams or (sys.stdout, sys.stderr)))
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def watching(
    verb: str, name: str, *, as_json: bool, emit_events: bool
) -> Iterator[Recorder | None]:
    """Install the sink this run's progress goes to; yield its recorder (None when
    progress goes to the plain lines or nowhere). The caller emits ``end``."""
    if emit_events:
        with events.recording(NdjsonSink(), verb=verb, provider=name) as rec:
            yield rec
        return
    if verb not in QUICK_VERBS and wants_live(as_json):
        with LiveView(verb, name) as view, events.recording(view, verb=verb, provider=name) as rec:
            yield rec
        return
    yield None


__all__ = ["LiveState", "LiveView", "NdjsonSink", "wants_live", "watching"]
