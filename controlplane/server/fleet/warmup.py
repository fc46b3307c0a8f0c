"""What a server that starts under a fleet knows before its first request.

A restarted server (or a new replica) used to learn each worker from that worker's
first request: 10,000 daemons coming back after a restart each sent a long-poll
the hot path could not answer (the worker, its provider and whether anything is
queued for it were unknown), so every one went through the routes, two database
looks in a pool thread each, all within the few seconds the fleet's
``Retry-After`` spreads them over. Measured at 10,000 daemons on SQLite: two
minutes until every daemon was seen again.

At start-up :func:`read` takes, in one session, every registered worker (id,
namespace, provider, instance) and the providers with work queued, and
:func:`apply` hands them to the caches the hot path reads: the known workers
(``Heartbeats.know``), the worker owners, and the providers known to have nothing
queued (``QueueHints.mark_empty`` under the generation read before the look, so a
submit that lands meanwhile, here or on another replica, still wins). Tokens are
not read ahead: each daemon's first request still looks its token up once.

The same read serves a server that is already up when requests for workers it has
never seen arrive together: the daemons of a replica that died, moving to this one
(:class:`Relearn`). The first such request reads the fleet again, the others that
miss meanwhile wait for that one read instead of each looking itself up in a pool
thread, and the read is repeated at most every :data:`RELEARN_SECONDS`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ...models import Worker, WorkItem
from .heartbeats import Heartbeats
from .queued import QueueHints

MAX_WORKERS = 200_000  # beyond this the caches are left to fill as requests come
RELEARN_SECONDS = 5.0  # at most one read of the fleet this often on cache misses
log = logging.getLogger("lakeshore.warmup")


@dataclass
class Fleet:
    workers: list[tuple[str, int, str, str]] = field(default_factory=list)
    queued: set[tuple[int, str]] = field(default_factory=set)


def read(make_session: sessionmaker[Session], limit: int = MAX_WORKERS) -> Fleet:
    """The registered workers (most recently seen first) and the providers with
    work queued (run in a thread: two queries)."""
    with make_session() as session:
        workers = session.execute(
            select(Worker.id, Worker.namespace_id, Worker.provider_name, Worker.instance_id)
            .where(Worker.deregistered_at.is_(None))
            .order_by(Worker.last_seen.desc())
            .limit(limit)
        ).all()
        queued = session.execute(
            select(WorkItem.namespace_id, WorkItem.provider_name)
            .where(WorkItem.state == "queued")
            .distinct()
        ).all()
    return Fleet(
        [(w, ns, p, i) for w, ns, p, i in workers],
        {(ns, p) for ns, p in queued},
    )


def apply(
    fleet: Fleet,
    hb: Heartbeats,
    hints: QueueHints,
    owners: dict[str, tuple[str, str]],
    generations: Mapping[str, int],
) -> int:
    """Hand ``fleet`` to the caches (on the event loop); ``generations`` is what
    ``hints.generations()`` gave before :func:`read` ran. Returns how many workers
    were read."""
    empty: set[str] = set()
    for worker_id, ns, provider, instance in fleet.workers:
        if hb.provider_of(worker_id) is None:  # a request already taught it: keep that
            hb.know(worker_id, ns, provider)
        owners.setdefault(worker_id, (provider, instance))
        if (ns, provider) not in fleet.queued:
            empty.add(f"work:{ns}:{provider}")
    for key in empty:
        hints.mark_empty(key, generations.get(key, 0))
    return len(fleet.workers)


class Relearn:
    """Read the fleet again for requests about workers this server does not know
    (see the module's docstring). Call it on the event loop; it returns once the
    read that was running, or the one it started, has been applied, or at once when
    the last read is under ``every`` seconds old."""

    def __init__(
        self,
        make_session: sessionmaker[Session],
        hb: Heartbeats,
        hints: QueueHints,
        owners: Callable[[], dict[str, tuple[str, str]]],
        every: float = RELEARN_SECONDS,
    ) -> None:
        self.make_session = make_session
        self.hb = hb
        self.hints = hints
        self.owners = owners
        self.every = every
        self.reads = 0
        self._task: asyncio.Future[None] | None = None
        self._next = 0.0

    async def __call__(self) -> None:
        if self._task is None:
            if time.monotonic() < self._next:
                return
            self._task = asyncio.ensure_future(self._read())
        await asyncio.shield(self._task)

    async def load(self) -> int:
        """Read the fleet and hand it to the caches (the start-up read, and each read
        again); how many workers were read. Raises what the database raises."""
        from anyio import to_thread

        generations = self.hints.generations()  # before the read: a submit meanwhile wins
        fleet = await to_thread.run_sync(read, self.make_session)
        return apply(fleet, self.hb, self.hints, self.owners(), generations)

    async def _read(self) -> None:
        try:
            known = await self.load()
            self.reads += 1
            log.info("read the fleet again for a worker not known here: %d workers", known)
        except Exception:  # the database is away: each request's route answers
            log.warning("reading the fleet again failed", exc_info=True)
        finally:
            self._next = time.monotonic() + self.every
            self._task = None
