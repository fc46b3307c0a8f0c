"""The hot look-ups by namespace and provider read through the composite index made
for them, on a real migrated SQLite database: SQLite keeps no statistics, so where
several single-column indexes match it takes the first (``namespace_id``) and reads
every row of the namespace. Each plan is of the statement the code itself sends
(caught on its way to the database while the real function runs)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane import db
from dreamlake.controlplane.models import Namespace, Token, Worker, WorkItem
from dreamlake.controlplane.server import store
from dreamlake.controlplane.server.access import daemon_tokens
from dreamlake.controlplane.server.schemas import WorkerIn
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session

PROVIDERS = 30


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """A migrated SQLite database with a few hundred tokens and work items, mostly
    spent or finished, over one namespace and :data:`PROVIDERS` providers."""
    made = db.make_engine(db.sqlite_url(Path(tmp_path_factory.mktemp("plans"))))
    db.run_migrations(made)
    now = db.utcnow()
    with db.make_sessionmaker(made)() as session:
        ns = Namespace(name="default")
        session.add(ns)
        session.flush()
        for i in range(300):
            session.add(
                Token(
                    token_hash=f"{i:064x}",
                    namespace_id=ns.id,
                    scope="bootstrap" if i % 2 else "daemon",
                    provider_name=f"p{i % PROVIDERS}",
                    host=f"host-{i % 60}",
                    revoked_at=now if i % 4 == 1 else None,
                )
            )
        for i in range(400):
            session.add(
                WorkItem(
                    id=f"item-{i}",
                    namespace_id=ns.id,
                    provider_name=f"p{i % PROVIDERS}",
                    command="true",
                    state="queued" if i % 10 == 0 else "succeeded",
                    created_at=now - timedelta(seconds=400 - i),
                )
            )
        session.add(
            Worker(id="w-3", namespace_id=ns.id, provider_name="p0", instance_id="i-3", queues=[])
        )
        session.commit()
    yield made
    made.dispose()


def _sent(
    engine: Engine, table: str, run: Callable[[Session], object], by: str = "provider_name"
) -> list[Any]:
    """The reads (and updates) of ``table`` filtered ``by`` that ``run`` sends (SQL
    and parameters), run in a session of its own."""
    sent: list[Any] = []
    reads = ("SELECT", f"UPDATE {table} ")

    def catch(_conn: Any, _cursor: Any, sql: str, params: Any, _ctx: Any, _many: bool) -> None:
        where = sql.partition("WHERE")[2]
        if (
            sql.startswith(reads)
            and (f"FROM {table}" in sql or "UPDATE" in sql)
            and f"{table}.{by}" in where
        ):
            sent.append((sql, params))

    event.listen(engine, "before_cursor_execute", catch)
    try:
        with db.make_sessionmaker(engine)() as session:
            run(session)
            session.rollback()
    finally:
        event.remove(engine, "before_cursor_execute", catch)
    assert sent, f"no read of {table} by {by} was sent"
    return sent


def _plans(engine: Engine, sent: list[Any]) -> list[list[str]]:
    """SQLite's ``EXPLAIN QUERY PLAN`` of each statement sent."""
    with engine.connect() as conn:
        return [
            [str(row[3]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params)]
            for sql, params in sent
        ]


def _read_through(plans: list[list[str]], table: str, index: str) -> None:
    for plan in plans:
        assert any(step.startswith(f"SEARCH {table} USING INDEX {index} (") for step in plan), plan
        scans = [step for step in plan if step.startswith("SCAN") and "CONSTANT ROW" not in step]
        assert not scans, plan  # no full scan (of a table or an index)
        assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan  # in the index's order


@pytest.mark.parametrize("host", ["host-7", None])
def test_revoking_a_providers_daemon_tokens_reads_that_provider_only(
    engine: Engine, host: str | None
) -> None:
    """Every token minted for a host (each connect): the ones it replaces there;
    destroy and delete: the provider's on every host."""
    revoked: list[int] = []
    sent = _sent(
        engine, "tokens", lambda s: revoked.extend(daemon_tokens.revoke(s, 1, "p7", host=host))
    )
    _read_through(_plans(engine, sent), "tokens", "ix_tokens_namespace_provider_host")
    assert revoked  # and it found them


def test_a_poll_claims_from_its_providers_queued_items_only(engine: Engine) -> None:
    """``store.try_claim``'s candidates, oldest first, and ``store.any_queued``'s
    question."""
    claimed: list[Any] = []

    def poll(session: Session) -> None:
        worker = session.get(Worker, "w-3")
        assert worker is not None
        item = store.try_claim(session, worker)
        claimed.append(item and item.id)
        claimed.append(store.any_queued(session, 1, "p0"))

    sent = _sent(engine, "work_items", poll)
    assert len(sent) == 2
    _read_through(_plans(engine, sent), "work_items", "ix_work_items_by_state")
    assert claimed == ["item-0", True]  # the oldest, and more queued after it


def test_a_workers_runs_are_found_through_the_worker(engine: Engine) -> None:
    """A re-registration asks whether the worker had a run going (and loses it):
    through the worker's own items, not every running item of the server."""
    body = WorkerIn(provider_name="p0", instance_id="i-3")
    sent = _sent(engine, "work_items", lambda s: store.register(s, 1, body), by="worker_id")
    _read_through(_plans(engine, sent), "work_items", "ix_work_items_worker")


def test_a_claim_asks_about_the_leases_in_force_only(engine: Engine) -> None:
    """Whether a capacity lease holds the worker (``store.leased``, asked by every
    claim that found an item): the namespace's leases in force, not every lease it
    ever had (ended ones stay as history)."""

    def ask(session: Session) -> None:
        worker = session.get(Worker, "w-3")
        assert worker is not None and not store.leased(session, worker)

    sent = _sent(engine, "capacity_leases", ask, by="namespace_id")
    _read_through(_plans(engine, sent), "capacity_leases", "ix_capacity_leases_namespace_state")
