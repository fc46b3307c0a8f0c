"""Per-provider backoff: after a failed step the watcher leaves that provider alone
for a while, the pause doubling with each failure in a row up to a cap, so a broken
provider cannot spin (and cannot hold up the others). A step that works clears it."""

from __future__ import annotations

from dataclasses import dataclass, field

BASE = 30.0  # seconds after the first failure
CAP = 30 * 60.0  # never longer than this


@dataclass
class Backoff:
    """Failures in a row and when each provider may be tried again (monotonic seconds)."""

    base: float = BASE
    cap: float = CAP
    failures: dict[str, int] = field(default_factory=dict)
    until: dict[str, float] = field(default_factory=dict)

    def delay(self, n: int) -> float:
        """The pause after ``n`` failures in a row (n >= 1): base, 2×base, 4×base … ≤ cap."""
        return float(min(self.cap, self.base * (2 ** max(0, n - 1))))

    def failed(self, name: str, now: float) -> float:
        """Record a failure; returns the pause before the next try."""
        n = self.failures.get(name, 0) + 1
        self.failures[name] = n
        pause = self.delay(n)
        self.until[name] = now + pause
        return pause

    def succeeded(self, name: str) -> None:
        self.failures.pop(name, None)
        self.until.pop(name, None)

    def waiting(self, name: str, now: float) -> float:
        """Seconds left before ``name`` may be tried again (0: now)."""
        return max(0.0, self.until.get(name, 0.0) - now)


__all__ = ["BASE", "CAP", "Backoff"]
