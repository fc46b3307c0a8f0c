"""A fresh SQLite database made in one step is what the migrations make of one, and
a database at every head is left without Alembic (``dbsnapshot.py``; that a start
imports no Alembic at all: ``test_serve_start.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane import db, dbsnapshot

CONSTRAINTS = ("PRIMARY KEY", "FOREIGN KEY", "UNIQUE", "CONSTRAINT", "CHECK")


def _statement(sql: str | None) -> Any:
    """A ``CREATE TABLE`` up to the order of the constraint clauses after its columns
    (Alembic keeps those in sets when it rebuilds a table); the columns keep theirs."""
    if not sql or not sql.startswith("CREATE TABLE"):
        return sql
    head, _, body = sql.partition("(\n\t")
    parts = body.removesuffix("\n)").split(", \n\t")
    columns = [p for p in parts if not p.startswith(CONSTRAINTS)]
    return (head, tuple(columns), tuple(sorted(p for p in parts if p.startswith(CONSTRAINTS))))


def _canonical(schema: list[Any]) -> list[tuple[str, str, str, Any]]:
    """``sqlite_master`` up to what two runs of the migrations differ in: the order of
    its rows, and of a rebuilt table's constraint clauses."""
    return sorted(((k, n, t, _statement(sql)) for k, n, t, sql in schema), key=repr)


def _made(path: Path, make: Any) -> tuple[list[Any], set[str] | None]:
    engine = db.make_engine(db.sqlite_url(path))
    try:
        make(engine)
        with engine.connect() as conn:
            return dbsnapshot.sqlite_schema(conn), dbsnapshot.stamped_heads(conn)
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Any], set[str] | None]:
    """What Alembic makes of an empty SQLite file."""
    return _made(tmp_path_factory.mktemp("alembic"), db.upgrade_with_alembic)


def test_the_snapshot_is_current() -> None:
    assert dbsnapshot.current_snapshot(db.version_locations()) is not None, (
        "a migration changed: python -m dreamlake.controlplane.dbsnapshot_make writes the snapshot again"
    )


def test_the_writer_makes_the_snapshot_again() -> None:
    from dreamlake.controlplane.dbsnapshot_make import made_by_migrations
    from dreamlake.controlplane.migrations import sqlite_schema

    made: dict[str, Any] = {}
    exec(made_by_migrations(), made)
    assert (made["DIGEST"], made["HEADS"]) == (sqlite_schema.DIGEST, sqlite_schema.HEADS)
    assert sorted(map(repr, map(_statement, made["STATEMENTS"]))) == sorted(
        map(repr, map(_statement, sqlite_schema.STATEMENTS))
    )


def test_a_fresh_database_is_what_the_migrations_make(
    tmp_path: Path, migrated: tuple[list[Any], set[str] | None]
) -> None:
    from dreamlake.controlplane.migrations import sqlite_schema

    schema, heads = _made(tmp_path, db.run_migrations)
    # made from the snapshot, statement for statement
    assert [
        sql for *_, sql in schema if sql and not sql.startswith("CREATE TABLE sqlite_")
    ] == list(sqlite_schema.STATEMENTS)
    assert heads == set(sqlite_schema.HEADS) == migrated[1]
    assert _canonical(schema) == _canonical(migrated[0])


def test_a_stale_snapshot_leaves_the_work_to_alembic(
    tmp_path: Path, migrated: tuple[list[Any], set[str] | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dreamlake.controlplane.migrations import sqlite_schema

    monkeypatch.setattr(sqlite_schema, "DIGEST", "made from other migrations")
    assert dbsnapshot.current_snapshot(db.version_locations()) is None
    loaded: list[Any] = []
    monkeypatch.setattr(dbsnapshot, "load_sqlite", lambda *a: loaded.append(a))
    schema, heads = _made(tmp_path, db.run_migrations)
    assert loaded == []
    assert heads == migrated[1]
    assert _canonical(schema) == _canonical(migrated[0])


def test_a_database_part_way_is_migrated_by_alembic(
    tmp_path: Path, migrated: tuple[list[Any], set[str] | None]
) -> None:
    from alembic import command

    def part_way_then_on(engine: Any) -> None:
        command.upgrade(db.alembic_config(engine), "0001_core")
        db.run_migrations(engine)

    schema, heads = _made(tmp_path, part_way_then_on)
    assert heads == migrated[1]
    assert _canonical(schema) == _canonical(migrated[0])


@pytest.mark.needs_postgres
def test_postgres_replicas_starting_together_then_again(
    postgres: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from dreamlake.controlplane.migrations import sqlite_schema

    url = postgres.new_database()
    engines = [db.make_engine(url) for _ in range(3)]
    failed: list[BaseException] = []

    def start(engine: Any) -> None:
        try:
            db.run_migrations(engine)
        except BaseException as exc:
            failed.append(exc)

    try:
        threads = [threading.Thread(target=start, args=(e,)) for e in engines]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert failed == []
        with engines[0].connect() as conn:
            assert dbsnapshot.stamped_heads(conn) == set(sqlite_schema.HEADS)

        def no_alembic(engine: Any) -> None:
            raise AssertionError("a database at every head reached Alembic")

        monkeypatch.setattr(db, "upgrade_with_alembic", no_alembic)
        db.run_migrations(engines[1])
    finally:
        for engine in engines:
            engine.dispose()
