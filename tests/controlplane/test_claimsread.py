"""Claims read on the event loop (controlplane/server/fleet/claimsread.py) on real SQLite
and PostgreSQL: the same answers as ``store.claims`` for every identity rule, the
heartbeat overlay included; the thread answers when the loop's way fails."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from dreamlake.controlplane.db import make_sessionmaker, utcnow
from dreamlake.controlplane.models import Namespace, Worker
from dreamlake.controlplane.registry.models import Provider
from dreamlake.controlplane.server import store
from dreamlake.controlplane.server.fleet import claimsread
from dreamlake.controlplane.server.fleet.heartbeats import Heartbeats
from sqlalchemy.orm import Session, sessionmaker

LIVE = 30.0


@pytest.fixture
def app(migrated_engine: Any) -> Iterator[Any]:
    engine = migrated_engine
    state = SimpleNamespace(
        engine=engine,
        sessionmaker=make_sessionmaker(engine),
        read_sessionmaker=make_sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT")),
    )
    app = SimpleNamespace(state=state)
    yield app
    claimsread.close(app)


def _fleet(make_session: sessionmaker[Session]) -> int:
    """p: workers of identity A, of B, without one, a gone one, a deregistered one;
    the row of p owned by A; q: no row."""
    now = utcnow()
    with make_session() as s, s.begin():
        ns = Namespace(name=f"ns-{uuid.uuid4().hex[:6]}")
        s.add(ns)
        s.flush()

        def w(provider: str, inst: str, **kw: Any) -> Worker:
            kw.setdefault("last_seen", now - timedelta(seconds=5))
            kw.setdefault("registered_at", now - timedelta(seconds=len(inst)))
            return Worker(
                id=str(uuid.uuid4()),
                namespace_id=ns.id,
                provider_name=provider,
                instance_id=inst,
                host=f"h-{inst}",
                queues=["gpu", inst],
                **kw,
            )

        s.add_all(
            [
                w("p", "a1", identity="prv-a", polled_at=now),
                w("p", "b11", identity="prv-b"),
                w("p", "n111"),
                w("p", "gone1111", last_seen=now - timedelta(minutes=5)),
                w("p", "dereg11111", deregistered_at=now),
                w("q", "x1"),
            ]
        )
        s.add(Provider(namespace_id=ns.id, name="p", kind="local", identity="prv-a"))
        return ns.id


def _dump(c: Any) -> str:
    return str(c.model_dump_json(by_alias=True))


def test_same_answers_as_the_store(app: Any) -> None:
    ns_id = _fleet(app.state.sessionmaker)
    hb = Heartbeats(app.state.sessionmaker, 3600)

    async def run() -> None:
        for provider in ("p", "q", "nothing"):
            for identity in (None, "prv-a", "prv-b", "prv-c"):
                with app.state.sessionmaker() as s:
                    want = store.claims(s, ns_id, provider, LIVE, identity, hb.overlay)
                got = await claimsread.read(app, hb, ns_id, provider, LIVE, identity)
                assert _dump(got) == _dump(want), (provider, identity)

    asyncio.run(run())


def test_beats_not_yet_stored_count(app: Any) -> None:
    ns_id = _fleet(app.state.sessionmaker)
    hb = Heartbeats(app.state.sessionmaker, 3600)
    with app.state.sessionmaker() as s:
        gone = s.query(Worker).filter_by(namespace_id=ns_id, instance_id="gone1111").one()

    async def run() -> Any:
        hb.know(gone.id, ns_id, "p")
        hb.beat_known(ns_id, gone.id, polled=True)  # alive again, in memory only
        return await claimsread.read(app, hb, ns_id, "p", LIVE, None)

    out = asyncio.run(run())
    states = {i.instance_id: i.state for i in out.instances}
    assert states["gone1111"] == "active" and out.gone == 1  # the deregistered one


def test_the_loop_answers_and_the_thread_is_the_fallback(app: Any) -> None:
    ns_id = _fleet(app.state.sessionmaker)
    hb = Heartbeats(app.state.sessionmaker, 3600)
    good = app.state.read_sessionmaker

    def refuse() -> Any:
        raise AssertionError("read in a thread")

    app.state.read_sessionmaker = refuse  # the loop's way must not need it
    assert asyncio.run(claimsread.read(app, hb, ns_id, "p", LIVE, None)).live == 3
    app.state.read_sessionmaker = good
    claimsread.close(app)
    if app.state.engine.dialect.name == "postgresql":
        app.state.claims_pg = claimsread.AsyncPg("postgresql://nobody@127.0.0.1:9/none")
    else:
        app.state.claims_sqlite = refuse
    assert asyncio.run(claimsread.read(app, hb, ns_id, "p", LIVE, None)).live == 3
    app.state.claims_sqlite = app.state.claims_pg = None
