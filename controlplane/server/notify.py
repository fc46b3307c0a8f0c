"""Wake long-polls when something changes (work submitted, results reported).

In-process only; waiters also re-check the database on a short interval, so
several servers over one PostgreSQL still converge."""

from __future__ import annotations

import asyncio
import contextlib


class Notifier:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    def _bind(self) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._event is None:
            self._loop = loop
            self._event = asyncio.Event()
        return self._event

    def notify(self) -> None:
        """Wake every waiter. Safe from any thread."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._fire)

    def _fire(self) -> None:
        event = self._event
        self._event = asyncio.Event()
        if event is not None:
            event.set()

    async def wait(self, timeout: float) -> None:
        event = self._bind()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)
