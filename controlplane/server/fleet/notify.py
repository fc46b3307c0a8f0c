"""Wake long-polls when something they wait for changes, on this server and on every
other replica over the same PostgreSQL.

Keys name what changed: ``work:<ns id>:<provider>`` (work was queued for a provider),
``done:<work id>`` (a result came in), ``forget:worker:<id>`` / ``forget:tokens``
(caches to drop). A waiter takes the key's event *before* it looks at the
database, so a change between its look and its wait still wakes it.

Over PostgreSQL every :meth:`Notifier.publish` is also a ``NOTIFY lakeshore, key``
sent in the writer's transaction (delivered on commit), and :class:`PgListener`
(one thread, one dedicated connection doing ``LISTEN lakeshore``) fires the same
keys here. SQLite has one server by construction, so in-process firing is all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from .wakeup import Wakeup

CHANNEL = "lakeshore"
log = logging.getLogger("lakeshore.notify")


class Notifier:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._events: dict[str, Wakeup] = {}
        self._handlers: list[Callable[[str], None]] = []

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def on_key(self, handler: Callable[[str], None]) -> None:
        """Call ``handler(key)`` on the event loop for every key fired here."""
        self._handlers.append(handler)

    def event(self, key: str) -> Wakeup:
        """The event the next :meth:`fire` of ``key`` sets (take it before looking)."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        ev = self._events.get(key)
        if ev is None:
            ev = self._events[key] = Wakeup()
        return ev

    def fire(self, key: str) -> None:
        """Wake ``key``'s waiters. Safe from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._fire(key)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._fire, key)

    def _fire(self, key: str) -> None:
        ev = self._events.pop(key, None)
        if ev is not None:
            ev.set()
        for handler in self._handlers:
            try:
                handler(key)
            except Exception:  # a cache handler must never break a wake-up
                log.exception("notify handler failed for %s", key)

    def publish(self, session: Session, key: str) -> None:
        """Send ``key`` to every replica when ``session`` commits (PostgreSQL), and
        note it for this one; call :meth:`fire` after the commit."""
        if session.get_bind().dialect.name == "postgresql":
            session.execute(text("SELECT pg_notify(:c, :k)"), {"c": CHANNEL, "k": key})

    @staticmethod
    async def wait(
        event: Wakeup,
        timeout: float,
        until: Wakeup | None = None,
        gone: asyncio.Future[Any] | None = None,
    ) -> bool:
        """Wait for ``event`` at most ``timeout`` seconds, and no longer than until
        ``until`` is set (the server's shutdown) or ``gone`` is done (the client's
        disconnect); True when ``event`` fired.

        One future and one timer, no task: 10,000 held polls wait here at once, and
        a shutdown wakes them all together."""
        if (
            timeout <= 0
            or (until is not None and until.is_set())
            or (gone is not None and gone.done())
        ):
            return event.is_set()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()

        def wake(_: object = None) -> None:
            if not waiter.done():
                waiter.set_result(None)

        event.enlist(waiter)
        if until is not None:
            until.enlist(waiter)
        if gone is not None:
            gone.add_done_callback(wake)
        timer = loop.call_later(timeout, wake)
        try:
            await waiter
        finally:
            timer.cancel()
            event.leave(waiter)
            if until is not None:
                until.leave(waiter)
            if gone is not None:
                gone.remove_done_callback(wake)
        return event.is_set()


class PgListener:
    """``LISTEN lakeshore`` on a dedicated connection, in one daemon thread, firing
    each payload on ``notifier``. Reconnects after a lost connection."""

    def __init__(self, url: str, notifier: Notifier) -> None:
        self.url = url
        self.notifier = notifier
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lakeshore-listen", daemon=True)
        self.ready = threading.Event()

    def start(self) -> None:
        self._thread.start()
        self.ready.wait(10)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _connect(self) -> Any:
        import psycopg

        from ...db import pg_connect_kwargs

        conn = psycopg.connect(**pg_connect_kwargs(self.url), autocommit=True)
        conn.execute(f"LISTEN {CHANNEL}")
        return conn

    def _run(self) -> None:
        conn = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = self._connect()
                    self.ready.set()
                    self.notifier.fire("forget:all")  # missed keys while away: recheck
                # what arrives within a second, then a look at the stop flag
                for note in conn.notifies(timeout=1.0):
                    self.notifier.fire(note.payload)
            except Exception as exc:
                log.warning("LISTEN connection lost (%s); reconnecting", type(exc).__name__)
                with contextlib.suppress(Exception):
                    if conn is not None:
                        conn.close()
                conn = None
                self._stop.wait(1.0)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
