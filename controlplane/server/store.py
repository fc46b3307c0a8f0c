"""Worker and work-item operations on a session. Pure SQL, no HTTP."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, exists, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from ..capacity.models import ACTIVE, CapacityLease
from ..db import utcnow
from ..models import Worker, WorkItem
from .schemas import ClaimInstance, Claims, WorkerIn, WorkerOut, WorkIn, WorkOut, WorkResultIn

FINISHED = ("succeeded", "failed", "lost")


def is_live(worker: Worker, live_seconds: float, now: datetime | None = None) -> bool:
    now = now or utcnow()
    return worker.deregistered_at is None and worker.last_seen >= now - timedelta(
        seconds=live_seconds
    )


def worker_state(worker: Worker, live_seconds: float, now: datetime | None = None) -> str:
    if not is_live(worker, live_seconds, now):
        return "gone"
    return "active" if worker.polled_at is not None else "joining"


def register(
    session: Session, namespace_id: int, body: WorkerIn, token_id: int | None = None
) -> tuple[Worker, bool]:
    """Register (or re-register) a daemon with the token ``token_id``. Returns
    (worker, created)."""
    try:
        return _register(session, namespace_id, body, token_id)
    except IntegrityError:  # the same instance registered concurrently: take its row over
        session.rollback()
        return _register(session, namespace_id, body, token_id)


def _register(
    session: Session, namespace_id: int, body: WorkerIn, token_id: int | None
) -> tuple[Worker, bool]:
    now = utcnow()
    row = session.scalar(
        select(Worker).where(
            Worker.namespace_id == namespace_id,
            Worker.provider_name == body.provider_name,
            Worker.instance_id == body.instance_id,
        )
    )
    created = row is None
    if row is None:
        row = Worker(
            id=str(uuid.uuid4()),
            namespace_id=namespace_id,
            provider_name=body.provider_name,
            instance_id=body.instance_id,
            registered_at=now,
        )
        session.add(row)
    else:
        # A fresh process took over this instance id: its predecessor's runs are lost.
        # Asked first, because an UPDATE takes SQLite's one write lock even when it
        # matches nothing, and a fleet retrying its registrations has none to lose.
        running = select(WorkItem.id).where(
            WorkItem.worker_id == row.id, WorkItem.state == "running"
        )
        if session.scalar(running.limit(1)) is not None:
            session.execute(
                update(WorkItem)
                .where(WorkItem.worker_id == row.id, WorkItem.state == "running")
                .values(
                    state="lost",
                    error="the worker re-registered; the run was lost",
                    finished_at=now,
                )
            )
        row.registered_at = now
    row.host = body.host
    row.queues = list(dict.fromkeys(body.queues))
    row.version = body.version
    row.identity = body.identity
    row.token_id = token_id
    row.last_seen = now
    row.polled_at = None
    row.deregistered_at = None
    session.commit()
    return row, created


def find_worker(session: Session, namespace_id: int, worker_id: str) -> Worker | None:
    row = session.get(Worker, worker_id)
    if row is None or row.namespace_id != namespace_id or row.deregistered_at is not None:
        return None
    return row


def beat(session: Session, namespace_id: int, worker_id: str) -> datetime | None:
    """One heartbeat as a single UPDATE. None when the worker is unknown/deregistered."""
    now = utcnow()
    result = session.execute(
        update(Worker)
        .where(
            Worker.id == worker_id,
            Worker.namespace_id == namespace_id,
            Worker.deregistered_at.is_(None),
        )
        .values(last_seen=now)
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return now if result.rowcount == 1 else None  # type: ignore[attr-defined]


def touch(session: Session, worker: Worker, *, polled: bool = False) -> None:
    now = utcnow()
    worker.last_seen = now
    if polled:
        worker.polled_at = now
    session.commit()


def deregister(session: Session, worker: Worker) -> None:
    now = utcnow()
    worker.deregistered_at = now
    session.execute(
        update(WorkItem)
        .where(WorkItem.worker_id == worker.id, WorkItem.state == "running")
        .values(state="lost", error="the worker deregistered before reporting", finished_at=now)
    )
    session.commit()


def worker_out(worker: Worker, live_seconds: float) -> WorkerOut:
    return WorkerOut(
        worker_id=worker.id,
        provider_name=worker.provider_name,
        instance_id=worker.instance_id,
        host=worker.host,
        queues=list(worker.queues or []),
        version=worker.version,
        state=worker_state(worker, live_seconds),  # type: ignore[arg-type]
        registered_at=worker.registered_at,
        last_seen=worker.last_seen,
        identity=worker.identity,
    )


def _owners(session: Session, namespace_id: int, names: Sequence[str]) -> dict[str, str | None]:
    """The identity owning each active provider row named in ``names`` (None: a row
    registered by hand); names without a row are absent."""
    from ..registry.models import Provider

    rows = session.execute(
        select(Provider.name, Provider.identity).where(
            Provider.namespace_id == namespace_id,
            Provider.name.in_(list(names)),
            Provider.deleted_at.is_(None),
        )
    )
    return {n: i for n, i in rows}


def counts_for(worker: Worker, identity: str | None, owner: str | None) -> bool:
    """Whether ``worker`` claims the provider asked for as ``identity``.

    Without an identity in the question, every worker of that name counts (the
    question of a caller older than identities). With one: a worker started for that
    identity counts; a worker of another identity never does; a worker without one
    (a daemon started before identities existed) counts by name only while the name
    is not owned by another identity, i.e. when the row has no identity, is this
    identity's, or there is no row."""
    if identity is None:
        return True
    if worker.identity is not None:
        return worker.identity == identity
    return owner is None or owner == identity


Overlay = Callable[[Worker], Worker]
"""Applies heartbeats not yet written (see ``heartbeats``) to a stored worker."""


def _unchanged(w: Worker) -> Worker:
    return w


def claims_of(
    rows: Sequence[Worker],
    identity: str | None,
    owner: str | None,
    live_seconds: float,
    overlay: Overlay = _unchanged,
) -> Claims:
    now = utcnow()
    instances: list[ClaimInstance] = []
    gone = 0
    for w in rows:
        w = overlay(w)
        if not counts_for(w, identity, owner):
            continue
        state = worker_state(w, live_seconds, now)
        if state == "gone":
            gone += 1
            continue
        # built from stored rows that were validated on the way in: no second validation
        # (every `provider status` reads this, under a fleet's load)
        instances.append(
            ClaimInstance.model_construct(
                instance_id=w.instance_id,
                host=w.host,
                state=state,
                last_seen=w.last_seen,
                queues=list(w.queues or []),
            )
        )
    return Claims.model_construct(live=len(instances), gone=gone, instances=instances)


def claims(
    session: Session,
    namespace_id: int,
    provider: str,
    live_seconds: float,
    identity: str | None = None,
    overlay: Overlay = _unchanged,
) -> Claims:
    rows = session.scalars(
        select(Worker)
        .where(Worker.namespace_id == namespace_id, Worker.provider_name == provider)
        .order_by(Worker.registered_at)
    ).all()
    owner = _owners(session, namespace_id, [provider]).get(provider) if identity else None
    return claims_of(rows, identity, owner, live_seconds, overlay)


def claims_many(
    session: Session,
    namespace_id: int,
    wanted: Sequence[tuple[str, str | None]],
    live_seconds: float,
    overlay: Overlay = _unchanged,
) -> list[Claims]:
    """Claims for many ``(provider, identity)`` pairs: two queries, whatever the count."""
    names = sorted({n for n, _ in wanted})
    by_name: dict[str, list[Worker]] = {}
    owners: dict[str, str | None] = {}
    for start in range(0, len(names), 500):  # bounded IN lists
        chunk = names[start : start + 500]
        for w in session.scalars(
            select(Worker)
            .where(Worker.namespace_id == namespace_id, Worker.provider_name.in_(chunk))
            .order_by(Worker.registered_at)
        ):
            by_name.setdefault(w.provider_name, []).append(w)
        owners.update(_owners(session, namespace_id, chunk))
    return [
        claims_of(by_name.get(n, []), ident, owners.get(n), live_seconds, overlay)
        for n, ident in wanted
    ]


def submit(session: Session, namespace_id: int, provider: str, body: WorkIn) -> WorkItem:
    item = WorkItem(
        id=str(uuid.uuid4()),
        namespace_id=namespace_id,
        provider_name=provider,
        queue=body.queue,
        command=body.command,
        timeout_seconds=body.timeout_seconds,
        state="queued",
        created_at=utcnow(),
    )
    session.add(item)
    session.commit()
    return item


def any_queued(session: Session, namespace_id: int, provider: str) -> bool:
    """Whether any item (for any queue) waits for ``provider``."""
    any_one = queued_for(namespace_id, provider).with_only_columns(WorkItem.id).order_by(None)
    return session.scalar(any_one.limit(1)) is not None


def queued_for(namespace_id: int, provider: str) -> Select[Any]:
    """The items queued for ``provider``, oldest first: what a poll claims from and
    asks about. Read through the index on (namespace, provider, state, created_at):
    the namespace's finished items, however many, are never read."""
    return (
        select(WorkItem)
        .where(
            WorkItem.namespace_id == namespace_id,
            WorkItem.provider_name == provider,
            WorkItem.state == "queued",
        )
        .order_by(WorkItem.created_at, WorkItem.id)
    )


def _held(worker: Worker, now: datetime) -> ColumnElement[bool]:
    """A capacity lease in force holds ``worker``: granted on it (an idle worker), or on
    the instance it runs on when that instance was launched for the lease. A lease past
    its expiry no longer holds it, whether or not the loop has ended it yet."""
    return exists().where(
        CapacityLease.namespace_id == worker.namespace_id,
        CapacityLease.state.in_(ACTIVE),
        CapacityLease.expires_at >= now,
        or_(
            CapacityLease.worker_id == worker.id,
            and_(
                CapacityLease.launched == 1,
                CapacityLease.provider_name == worker.provider_name,
                CapacityLease.instance_id == worker.instance_id,
            ),
        ),
    )


def lock_worker(session: Session, worker_id: str) -> None:
    """Take ``worker_id``'s row for the rest of the transaction (PostgreSQL's ``FOR
    UPDATE``; SQLite serialises every write anyway). A claim and a lease grant on one
    worker both take it before writing, so each one's check of the other (a lease in
    force; work running) sees what the other committed: a worker is never both
    leased and handed an item."""
    session.execute(select(Worker.id).where(Worker.id == worker_id).with_for_update())


def running_on(worker_id: str) -> ColumnElement[bool]:
    """An item is running on ``worker_id``."""
    return exists().where(WorkItem.worker_id == worker_id, WorkItem.state == "running")


def leased(session: Session, worker: Worker, now: datetime | None = None) -> bool:
    """Whether a capacity lease in force holds ``worker`` (see ``_held``)."""
    return bool(session.scalar(select(_held(worker, now or utcnow()))))


def try_claim(session: Session, worker: Worker) -> WorkItem | None:
    """Atomically hand the oldest matching queued item to ``worker``.

    A worker a capacity lease holds takes no queue work: the lease holder has it to
    themselves until the lease is released or runs out. The lease is looked up only
    once there is an item to hand out (a poll with nothing for it costs no query more),
    and the claim's UPDATE checks it again under the worker's row lock
    (:func:`lock_worker`), so a lease granted in between still wins."""
    queues = set(worker.queues or [])
    for _attempt in range(5):
        candidates = session.scalars(
            queued_for(worker.namespace_id, worker.provider_name).limit(50)
        ).all()
        pick = next((c for c in candidates if c.queue is None or c.queue in queues), None)
        if pick is None:
            session.rollback()
            return None
        now = utcnow()
        if leased(session, worker, now):
            session.rollback()
            return None
        lock_worker(session, worker.id)
        result = session.execute(
            update(WorkItem)
            .where(WorkItem.id == pick.id, WorkItem.state == "queued", ~_held(worker, now))
            .values(state="running", worker_id=worker.id, started_at=now)
            .execution_options(synchronize_session=False)
        )
        if result.rowcount == 1:  # type: ignore[attr-defined]
            # taking work is a sign of life, written with the claim itself
            session.execute(
                update(Worker)
                .where(Worker.id == worker.id)
                .values(last_seen=now, polled_at=now)
                .execution_options(synchronize_session=False)
            )
        session.commit()
        if result.rowcount == 1:  # type: ignore[attr-defined]
            # what the UPDATE wrote, set without reading the row back: a read after
            # the commit may take another pooled connection, and a worker is answered
            # from what this transaction did, whatever anyone committed since
            for key, value in (("state", "running"), ("worker_id", worker.id), ("started_at", now)):
                set_committed_value(pick, key, value)
            return pick
    return None


def find_work(session: Session, namespace_id: int, work_id: str) -> WorkItem | None:
    item = session.get(WorkItem, work_id)
    if item is None or item.namespace_id != namespace_id:
        return None
    return item


def report(session: Session, item: WorkItem, body: WorkResultIn) -> WorkItem:
    ok = body.error is None and body.exit_code == 0
    item.state = "succeeded" if ok else "failed"
    item.exit_code = body.exit_code
    item.output_tail = body.output_tail
    item.error = body.error
    item.finished_at = utcnow()
    session.commit()
    return item


def work_state(
    session: Session,
    item: WorkItem,
    live_seconds: float,
    overlay: Callable[[Worker], Worker] = lambda w: w,
) -> str:
    """A running item whose worker has gone reads as ``lost`` (``overlay`` applies
    beats not yet written, see ``heartbeats``)."""
    if item.state == "running" and item.worker_id is not None:
        worker = session.get(Worker, item.worker_id)
        if worker is None or not is_live(overlay(worker), live_seconds):
            return "lost"
    return item.state


def work_out(
    session: Session,
    item: WorkItem,
    live_seconds: float,
    overlay: Callable[[Worker], Worker] = lambda w: w,
) -> WorkOut:
    state = work_state(session, item, live_seconds, overlay)
    return WorkOut(
        id=item.id,
        provider_name=item.provider_name,
        queue=item.queue,
        command=item.command,
        timeout_seconds=item.timeout_seconds,
        state=state,  # type: ignore[arg-type]
        worker_id=item.worker_id,
        exit_code=item.exit_code,
        output_tail=item.output_tail,
        error=item.error
        if state != "lost" or item.error
        else "the worker went away before reporting",
        created_at=item.created_at,
        started_at=item.started_at,
        finished_at=item.finished_at,
    )
