"""The claims of one provider, read without a worker thread.

Every ``provider status`` asks for them, so agents looping on status ask all the
time, and under a fleet's load a read in a worker thread spends most of its time
waiting for its turn at the interpreter lock, which the event loop holds most of the
time (measured at 10,000 daemons: 5–7 ms server time for a read that takes 1 ms
idle). So:

* **PostgreSQL**: the two small queries run on psycopg's asynchronous connections,
  driven by the event loop itself, from a small pool of their own: no thread, no
  lock hand-over, no transaction (the connections are in autocommit).
* **SQLite**: the read runs on the event loop: an indexed read of a local file in WAL
  mode never waits for a writer and costs less than the hop to a thread would.

Both give exactly what ``store.claims`` gives (same rows, same heartbeat overlay, same
identity rule); any failure of the asynchronous path falls back to ``store.claims``
in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ...db import pg_connect_kwargs, safe_json_loads
from ...registry.models import Provider
from .. import store
from ..schemas import Claims
from ..store import claims_of

log = logging.getLogger("lakeshore.claims")

WORKERS_SQL = (
    "SELECT id, instance_id, host, queues, identity, last_seen, polled_at, deregistered_at "
    "FROM workers WHERE namespace_id = %s AND provider_name = %s ORDER BY registered_at"
)
OWNER_SQL = (
    f"SELECT identity FROM {Provider.__tablename__} "
    "WHERE namespace_id = %s AND name = %s AND deleted_at IS NULL"
)
TIMEOUT = 10.0


@dataclass
class Row:
    """A stored worker, as much of it as the claims need (``store`` reads the same
    attributes off the ORM object)."""

    id: str
    instance_id: str
    host: str
    queues: list[str]
    identity: str | None
    last_seen: datetime
    polled_at: datetime | None
    deregistered_at: datetime | None


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _queues(value: Any) -> list[str]:
    if isinstance(value, str):  # a driver that hands JSON back as text
        value = safe_json_loads(value)
    return list(value or [])


def rows_of(raw: list[tuple[Any, ...]]) -> list[Row]:
    out = []
    for wid, instance, host, queues, identity, seen, polled, gone in raw:
        last_seen = _utc(seen)
        assert last_seen is not None
        out.append(
            Row(wid, instance, host, _queues(queues), identity, last_seen, _utc(polled), _utc(gone))
        )
    return out


class AsyncPg:
    """A few psycopg asynchronous connections, driven by the event loop."""

    def __init__(self, url: Any, size: int = 4) -> None:
        self.kwargs = pg_connect_kwargs(url)
        self._idle: list[Any] = []
        self._slots = asyncio.Semaphore(size)

    async def _connect(self) -> Any:
        import psycopg

        return await asyncio.wait_for(
            psycopg.AsyncConnection.connect(autocommit=True, **self.kwargs), TIMEOUT
        )

    async def fetch(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        async with self._slots:
            conn = self._idle.pop() if self._idle else await self._connect()
            try:
                async with conn.cursor() as cur:
                    await asyncio.wait_for(cur.execute(sql, params), TIMEOUT)
                    rows: list[tuple[Any, ...]] = await cur.fetchall()
            except BaseException:
                with contextlib.suppress(Exception):
                    await conn.close()
                raise
            self._idle.append(conn)
            return rows

    def close(self) -> None:
        """Close the idle connections (at shutdown, from a running loop or not)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.pgconn.finish()  # the socket, without awaiting


async def read_pg(
    pg: AsyncPg,
    hb: Any,
    namespace_id: int,
    provider: str,
    live_seconds: float,
    identity: str | None,
) -> Claims:
    rows = rows_of(await pg.fetch(WORKERS_SQL, (namespace_id, provider)))
    owner = None
    if identity:
        found = await pg.fetch(OWNER_SQL, (namespace_id, provider))
        owner = found[0][0] if found else None
    return claims_of(rows, identity, owner, live_seconds, hb.overlay_with)  # type: ignore[arg-type]


def pg_reader(app: Any) -> AsyncPg | None:
    """The app's asynchronous reader over PostgreSQL (made on first use), else None."""
    engine = app.state.engine
    if engine.dialect.name != "postgresql":
        return None
    pg: AsyncPg | None = getattr(app.state, "claims_pg", None)
    if pg is None:
        pg = app.state.claims_pg = AsyncPg(engine.url.render_as_string(hide_password=False))
    return pg


def sqlite_reader(app: Any) -> Any:
    """Sessions for reads on the event loop over SQLite (autocommit, and a busy
    timeout of 0: a read that would have to wait fails at once and goes to a thread
    instead of stalling the loop), else None."""
    engine = app.state.engine
    if engine.dialect.name != "sqlite":
        return None
    made = getattr(app.state, "claims_sqlite", None)
    if made is None:
        from ...db import make_engine, make_sessionmaker

        inline = make_engine(engine.url.render_as_string(hide_password=False), 1, busy_seconds=0)
        made = app.state.claims_sqlite = make_sessionmaker(
            inline.execution_options(isolation_level="AUTOCOMMIT")
        )
    return made


async def read(
    app: Any, hb: Any, namespace_id: int, provider: str, live_seconds: float, identity: str | None
) -> Claims:
    """The claims of ``provider`` (what ``store.claims`` answers), read on the event
    loop when it can be, else in a worker thread."""
    try:
        pg = pg_reader(app)
        if pg is not None:
            return await read_pg(pg, hb, namespace_id, provider, live_seconds, identity)
        inline = sqlite_reader(app)
        if inline is not None:
            with inline() as session:
                return store.claims(
                    session, namespace_id, provider, live_seconds, identity, hb.overlay
                )
    except Exception as exc:  # the thread below gives the answer, or the real error
        log.debug("claims read on the event loop failed (%s: %s)", type(exc).__name__, exc)
    from fastapi.concurrency import run_in_threadpool

    def in_thread() -> Claims:
        with app.state.read_sessionmaker() as session:
            return store.claims(session, namespace_id, provider, live_seconds, identity, hb.overlay)

    return await run_in_threadpool(in_thread)


def close(app: Any) -> None:
    """Close what :func:`read` opened (at shutdown)."""
    pg = getattr(app.state, "claims_pg", None)
    if pg is not None:
        pg.close()
    inline = getattr(app.state, "claims_sqlite", None)
    if inline is not None:
        inline.kw["bind"].dispose()
    app.state.claims_pg = app.state.claims_sqlite = None
