"""Coalesced heartbeats (controlplane/server/fleet/heartbeats.py) on real SQLite and
PostgreSQL: many beats, one transaction; the stored times are the beats' own; a
deregistered worker is not brought back; readers see a beat before it is stored and
while it is being stored."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest
from dreamlake.controlplane.db import make_sessionmaker, utcnow
from dreamlake.controlplane.models import Namespace, Worker
from dreamlake.controlplane.server.fleet.heartbeats import Heartbeats
from sqlalchemy import event, select
from sqlalchemy.orm import Session, sessionmaker


@pytest.fixture
def make_session(migrated_engine: Any) -> sessionmaker[Session]:
    return make_sessionmaker(migrated_engine)


def _workers(make_session: sessionmaker[Session], n: int) -> list[str]:
    past = utcnow() - timedelta(minutes=5)
    with make_session() as s, s.begin():
        ns = Namespace(name=f"ns-{uuid.uuid4().hex[:6]}")
        s.add(ns)
        s.flush()
        ids = [str(uuid.uuid4()) for _ in range(n)]
        s.add_all(
            Worker(id=w, namespace_id=ns.id, provider_name="p", instance_id=w, last_seen=past)
            for w in ids
        )
    return ids


def _beat(hb: Heartbeats, ns_id: int, ids: list[str], polled: Any) -> dict[str, Any]:
    """Beat each worker as the routes do (on an event loop; the writer's own task
    ends with the loop, so only explicit flushes write)."""

    async def beats() -> dict[str, Any]:
        return {w: hb.beat_known(ns_id, w, polled=polled(i)) for i, w in enumerate(ids)}

    return asyncio.run(beats())


def test_many_beats_one_transaction_exact_times(make_session: sessionmaker[Session]) -> None:
    ids = _workers(make_session, 300)
    with make_session() as s:
        ns_id = s.scalars(select(Worker.namespace_id).where(Worker.id == ids[0])).one()
    hb = Heartbeats(make_session, 3600)
    for w in ids:
        hb.know(w, ns_id)
    beats = _beat(hb, ns_id, ids, polled=lambda i: i % 2 == 0)
    with make_session() as s, s.begin():  # one of them left meanwhile
        s.get(Worker, ids[-1]).deregistered_at = utcnow()  # type: ignore[union-attr]
    engine = make_session.kw["bind"]
    commits: list[int] = []
    event.listen(engine, "commit", lambda _c: commits.append(1))
    assert hb.flush() == 300 + 150
    assert len(commits) == 1
    with make_session() as s:
        rows = {w.id: w for w in s.scalars(select(Worker).where(Worker.id.in_(ids)))}
    for i, w in enumerate(ids[:-1]):
        assert rows[w].last_seen == beats[w]
        assert (rows[w].polled_at == beats[w]) if i % 2 == 0 else rows[w].polled_at is None
    assert rows[ids[-1]].last_seen < beats[ids[-1]]  # deregistered: not written
    assert hb.flush() == 0  # nothing pending: no transaction
    assert len(commits) == 1


def test_readers_see_beats_until_they_are_stored(make_session: sessionmaker[Session]) -> None:
    (wid,) = _workers(make_session, 1)
    with make_session() as s:
        row = s.get(Worker, wid)
        assert row is not None
    hb = Heartbeats(make_session, 3600)
    hb.know(wid, row.namespace_id)
    seen = _beat(hb, row.namespace_id, [wid], polled=lambda _i: True)[wid]
    pending = hb.take()  # handed to the writer, not written yet
    with make_session() as s:
        stale = s.get(Worker, wid)
        assert stale is not None and stale.last_seen < seen
        assert hb.overlay(stale).last_seen == seen and stale.polled_at == seen
    with make_session() as s:
        read_before = s.get(Worker, wid)  # read, then the writer commits
        assert read_before is not None
        hb.flush(pending)
        # a row read before the commit still sees the beat: the worker is not gone
        assert hb.overlay(read_before).last_seen == seen
    with make_session() as s:
        stored = s.get(Worker, wid)
        assert stored is not None and stored.last_seen == seen
    assert hb.pending(wid) is None


def test_a_held_poll_beats_every_refresh_interval_until_released(
    make_session: sessionmaker[Session],
) -> None:
    """A daemon's held long-poll is its heartbeat: the writer beats it every
    ``refresh_seconds`` while held, not after it ends, and never a forgotten worker."""
    import time as _time

    ids = _workers(make_session, 3)
    with make_session() as s:
        ns_id = s.scalars(select(Worker.namespace_id).where(Worker.id == ids[0])).one()
    hb = Heartbeats(make_session, 3600, refresh_seconds=0.2)
    for w in ids:
        hb.know(w, ns_id)
    _beat(hb, ns_id, ids, polled=lambda i: True)
    for w in ids:
        hb.hold(w)
    first, _ = hb.take()
    assert set(first) == set(ids)  # the polls' own beats
    assert hb.take()[0] == {}  # held, but beaten less than refresh_seconds ago
    _time.sleep(0.25)
    hb.release(ids[1])
    hb.forget(ids[2])
    again, _ = hb.take()
    assert set(again) == {ids[0]} and again[ids[0]] > first[ids[0]]
    hb.flush((again, {}))
    with make_session() as s:
        assert s.get(Worker, ids[0]).last_seen == again[ids[0]]  # type: ignore[union-attr]
    hb.release(ids[0])
    _time.sleep(0.25)
    assert hb.take()[0] == {}
