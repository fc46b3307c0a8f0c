"""How often the daemon says that the control plane keeps refusing its token.

The daemon retries a refused token for as long as it runs (its token file may be
rewritten meanwhile, by ``dreamlake provider connect``), with its backoff of a few
seconds: a line for each retry would be thousands a day saying one thing. A
:class:`Repeats` lets the first refusal be said at once and the ones after it
only at growing intervals (1 minute, then 2, 4, … up to an hour), each time with
how many there were; a request that goes through starts it over."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["FIRST_GAP", "LONGEST_GAP", "Repeats", "refused_line"]

FIRST_GAP = 60.0
"""Seconds after the first refusal before the next is said (then doubled)."""
LONGEST_GAP = 3600.0
"""The longest the daemon stays quiet about a refusal that goes on."""


class Repeats:
    """Counts one repeating refusal; says when it is to be logged (thread-safe:
    the poll and the heartbeat loops both count)."""

    def __init__(
        self,
        first_gap: float = FIRST_GAP,
        longest_gap: float = LONGEST_GAP,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._first_gap = first_gap
        self._longest_gap = longest_gap
        self._clock = clock
        self._lock = threading.Lock()
        self.count = 0
        self._gap = 0.0
        self._next_at = 0.0

    def seen(self) -> int | None:
        """Count one more refusal: the count to log now, or None (stay quiet)."""
        with self._lock:
            now = self._clock()
            self.count += 1
            if self.count > 1 and now < self._next_at:
                return None
            self._gap = (
                self._first_gap if self.count == 1 else min(self._longest_gap, self._gap * 2)
            )
            self._next_at = now + self._gap
            return self.count

    @property
    def gap(self) -> float:
        """How long the refusal is now kept quiet after it was last said."""
        return self._gap

    def clear(self) -> int:
        """The refusals are over (a request went through): start over; returns how
        many there were."""
        with self._lock:
            count, self.count = self.count, 0
            return count


def refused_line(count: int, quiet_for: float) -> str:
    """The log line for the ``count``-th refusal in a row, the next to be said no
    sooner than ``quiet_for`` seconds on: it names the fix each time."""
    fix = (
        "if it goes on, run `dreamlake provider connect` again to hand this host a new "
        "token (a launched instance: terminate it and launch again)"
    )
    if count == 1:
        return f"the control plane refused the token (401); re-reading it and retrying; {fix}"
    return (
        f"the control plane refused the token (401) {count} times in a row; still "
        f"re-reading it and retrying (said again after {quiet_for / 60:.0f} min if it "
        f"goes on); {fix}"
    )
