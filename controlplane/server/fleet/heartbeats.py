"""Coalesced heartbeats: a beat is a dict write in memory; one transaction per
interval writes every beat since the last one.

A heartbeat for a worker this server knows (it registered here, or was looked up
once) costs no thread and no database connection. Every ``flush_seconds`` one
transaction writes all pending ``last_seen`` (and first-poll ``polled_at``) values,
so the database sees one write per interval, not one per daemon. Readers on this
server (claims, listings) overlay the pending values, so they never look staler
than the database plus one interval; other replicas see the database, at most one
interval behind, well inside the live bound.

A long-poll held open is a sign of life too: a worker with a poll in flight here
(:meth:`Heartbeats.hold` … :meth:`Heartbeats.release`) gets a beat every
``refresh_seconds`` (the heartbeat interval the server asks of daemons) for as long
as the poll is held, so an idle daemon needs no heartbeat of its own and no second
connection. The beat is the same as a heartbeat's: stored with the others, seen by
every replica, and it stops when the poll ends or its connection closes (a daemon
killed with ``kill -9`` goes ``gone`` after the live bound, as before).

A worker deregistered on another replica is forgotten here through the
``forget:worker:<id>`` notification; known workers are re-checked against the
database every ``KNOWN_TTL`` seconds anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from ...db import utcnow
from ...models import Worker

KNOWN_TTL = 600.0
log = logging.getLogger("lakeshore.heartbeats")


@dataclass
class _Known:
    namespace_id: int
    until: float
    provider: str | None = None


def _write(conn: Any, column: str, values: dict[str, datetime]) -> None:
    """``column`` of every worker in ``values`` set to its time, in one statement on
    PostgreSQL (two arrays unnested) and one ``executemany`` on SQLite, without
    building a SQL expression per row: at 10,000 daemons this runs every second."""
    if conn.dialect.name == "postgresql":
        conn.execute(
            text(
                f"UPDATE workers AS w SET {column} = v.ts "
                "FROM unnest(CAST(:ids AS varchar[]), CAST(:ts AS timestamptz[])) AS v(id, ts) "
                "WHERE w.id = v.id AND w.deregistered_at IS NULL"
            ),
            {"ids": list(values), "ts": list(values.values())},
        )
        return
    table: Any = Worker.__table__
    to_db = table.c[column].type.bind_processor(conn.dialect)
    conn.exec_driver_sql(
        f"UPDATE workers SET {column} = ? WHERE id = ? AND deregistered_at IS NULL",
        [(to_db(t) if to_db else t, w) for w, t in values.items()],
    )


class Heartbeats:
    def __init__(
        self,
        make_session: sessionmaker[Session],
        flush_seconds: float,
        refresh_seconds: float | None = None,
    ) -> None:
        self.make_session = make_session
        self.flush_seconds = flush_seconds
        # a held poll beats this often (default: every flush)
        self.refresh_seconds = flush_seconds if refresh_seconds is None else refresh_seconds
        self._known: dict[str, _Known] = {}
        # worker id -> [polls held here, monotonic time of its last beat]
        self._held: dict[str, list[float]] = {}
        self._seen: dict[str, datetime] = {}
        self._polled: dict[str, datetime] = {}
        # handed to the writer, not committed yet: readers still overlay them
        self._inflight: tuple[dict[str, datetime], dict[str, datetime]] = ({}, {})
        # the last batch committed: a reader whose rows were read before that commit
        # still sees those beats (else a live worker reads as gone for one pass)
        self._written: tuple[dict[str, datetime], dict[str, datetime]] = ({}, {})
        self._task: asyncio.Task[None] | None = None
        self.flushes = 0
        self.beats = 0  # heartbeats recorded (not polls): lakeshore_heartbeats_received_total

    @property
    def running(self) -> bool:
        """Whether the writer runs (the server's lifespan has started it)."""
        return self._task is not None

    # -- what the routes call ------------------------------------------------

    def know(self, worker_id: str, namespace_id: int, provider: str | None = None) -> None:
        self._known[worker_id] = _Known(namespace_id, time.monotonic() + KNOWN_TTL, provider)

    def provider_of(self, worker_id: str) -> str | None:
        known = self._known.get(worker_id)
        return known.provider if known is not None else None

    def forget(self, worker_id: str) -> None:
        self._known.pop(worker_id, None)
        self._seen.pop(worker_id, None)
        self._polled.pop(worker_id, None)
        self._held.pop(worker_id, None)
        self._written[0].pop(worker_id, None)
        self._written[1].pop(worker_id, None)

    def hold(self, worker_id: str) -> None:
        """A poll of ``worker_id`` is held open here (it has just beaten)."""
        held = self._held.get(worker_id)
        if held is None:
            self._held[worker_id] = [1, time.monotonic()]
        else:
            held[0] += 1
            held[1] = time.monotonic()

    def release(self, worker_id: str) -> None:
        """That poll has ended (answered, or its connection closed)."""
        held = self._held.get(worker_id)
        if held is None:
            return
        held[0] -= 1
        if held[0] <= 0:
            del self._held[worker_id]

    def holding(self, worker_id: str) -> bool:
        return worker_id in self._held

    def polls_held(self) -> int:
        """Long-polls held open here now (read when /metrics is scraped)."""
        return int(sum(held[0] for held in list(self._held.values())))

    def _refresh_held(self) -> None:
        """Beat every worker whose poll has been held ``refresh_seconds`` since its
        last beat (as its heartbeat would have)."""
        if not self._held:
            return
        now = time.monotonic()
        due = now - self.refresh_seconds
        stamp: datetime | None = None
        for worker_id, held in self._held.items():
            if held[1] <= due:
                known = self._known.get(worker_id)
                if known is None or known.until < now:
                    continue  # forgotten or to be re-checked: the next poll's route decides
                stamp = stamp or utcnow()
                self._seen[worker_id] = stamp
                held[1] = now

    def beat_known(
        self, namespace_id: int, worker_id: str, *, polled: bool = False
    ) -> datetime | None:
        """Record a beat when ``worker_id`` is known here (no I/O); else None."""
        if self._task is None:
            self.start()
        known = self._known.get(worker_id)
        if known is None or known.namespace_id != namespace_id or known.until < time.monotonic():
            return None
        now = utcnow()
        self._seen[worker_id] = now
        if polled:
            self._polled[worker_id] = now
        else:
            self.beats += 1
        held = self._held.get(worker_id)
        if held is not None:
            held[1] = time.monotonic()
        return now

    def pending(self, worker_id: str) -> datetime | None:
        return self._seen.get(worker_id) or self._inflight[0].get(worker_id)

    def pending_polled(self, worker_id: str) -> datetime | None:
        return self._polled.get(worker_id) or self._inflight[1].get(worker_id)

    def overlay(self, worker: Worker) -> Worker:
        """``worker`` with this server's unwritten beat applied (in memory only)."""
        from sqlalchemy.orm.attributes import set_committed_value

        # set as if loaded: the overlay never turns into a write of its own
        return self.overlay_with(worker, set_committed_value)

    def overlay_with(self, worker: Any, put: Any = setattr) -> Any:
        """:meth:`overlay` on anything with a worker's attributes, each newer value
        set through ``put(worker, name, value)``."""
        # unwritten beats, then the last batch written (the row may predate its commit)
        seen = self.pending(worker.id) or self._written[0].get(worker.id)
        if seen is not None and seen > worker.last_seen:
            put(worker, "last_seen", seen)
        polled = self.pending_polled(worker.id) or self._written[1].get(worker.id)
        if polled is not None and (worker.polled_at is None or polled > worker.polled_at):
            put(worker, "polled_at", polled)
        return worker

    # -- the writer -----------------------------------------------------------

    def take(self) -> tuple[dict[str, datetime], dict[str, datetime]]:
        """The pending beats, handed over (call on the event loop). Until the
        writer has committed them, readers still see them (:meth:`overlay`)."""
        self._refresh_held()
        seen, self._seen = self._seen, {}
        polled, self._polled = self._polled, {}
        self._inflight = (seen, polled)
        return seen, polled

    def flush(self, pending: tuple[dict[str, datetime], dict[str, datetime]] | None = None) -> int:
        """Write ``pending`` (default: everything pending) in one transaction."""
        seen, polled = pending if pending is not None else self.take()
        if not seen and not polled:
            return 0
        try:
            with self.make_session() as session, session.begin():
                conn = session.connection()
                if seen:
                    _write(conn, "last_seen", seen)
                if polled:
                    _write(conn, "polled_at", polled)
        except Exception:
            log.exception("heartbeat flush failed; keeping %d beats for the next one", len(seen))
            for w, t in seen.items():
                self._seen.setdefault(w, t)
            for w, t in polled.items():
                self._polled.setdefault(w, t)
            return 0
        finally:
            if self._inflight[0] is seen:
                self._inflight = ({}, {})
        self._written = (seen, polled)
        self.flushes += 1
        return len(seen) + len(polled)

    async def run(self) -> None:
        from anyio import to_thread

        while True:
            await asyncio.sleep(self.flush_seconds)
            await to_thread.run_sync(self.flush, self.take())

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        from anyio import to_thread

        await to_thread.run_sync(self.flush, self.take())
