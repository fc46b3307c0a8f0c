"""Event-loop lag: a timer asked for every :data:`INTERVAL` seconds, and how late it
ran, observed into ``lakeshore_event_loop_lag_seconds``. A loop blocked by a slow
synchronous call shows here before anywhere else."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

INTERVAL = 0.5


class LoopLag:
    def __init__(self, histogram: Any, interval: float = INTERVAL) -> None:
        self.histogram = histogram
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """On the event loop (the server's lifespan)."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                asked = loop.time() + self.interval
                await asyncio.sleep(self.interval)
                self.histogram.observe(max(0.0, loop.time() - asked))
