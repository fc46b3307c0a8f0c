"""Per-provider backoff: growing, capped, cleared by a step that works."""

from __future__ import annotations

from dreamlake.engine.watcher.backoff import Backoff


def test_backoff_grows_to_its_cap_per_provider() -> None:
    b = Backoff(base=10, cap=60)
    assert [b.failed("a", 0) for _ in range(5)] == [10, 20, 40, 60, 60]
    assert b.waiting("a", 0) == 60 and b.waiting("a", 100) == 0
    assert b.waiting("b", 0) == 0  # another provider is not held up
    b.succeeded("a")
    assert b.waiting("a", 0) == 0 and b.failed("a", 0) == 10
