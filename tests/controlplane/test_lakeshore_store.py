"""The store underneath the API, in process: migrations to ``0001_core`` (and every
head), bootstrap idempotence, the SQLite WAL journal."""

from __future__ import annotations

from pathlib import Path

from dreamlake.controlplane.db import make_engine, make_sessionmaker, run_migrations, sqlite_url
from dreamlake.controlplane.server.bootstrap import bootstrap
from dreamlake.controlplane.server.settings import Settings
from sqlalchemy import inspect, text


def test_migrations_create_core_tables_and_rerun_cleanly(tmp_path: Path) -> None:
    engine = make_engine(sqlite_url(tmp_path))
    run_migrations(engine)
    run_migrations(engine)  # idempotent
    tables = set(inspect(engine).get_table_names())
    assert {"namespaces", "tokens", "workers", "work_items", "alembic_version"} <= tables
    with engine.connect() as conn:
        versions = {r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))}
        assert versions  # at least the core head (the registry chains on 0001_core)
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"


def test_core_revision_is_0001_core() -> None:
    from alembic.script import ScriptDirectory
    from dreamlake.controlplane.db import alembic_config

    script = ScriptDirectory.from_config(alembic_config())
    assert script.get_revision("0001_core").down_revision is None
    assert "0001_core" in {r.revision for r in script.walk_revisions()}


def test_bootstrap_keeps_a_valid_token_and_replaces_a_lost_one(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    engine = make_engine(settings.database_url())
    run_migrations(engine)
    sessions = make_sessionmaker(engine)
    path = bootstrap(settings, sessions)
    first = path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600
    assert bootstrap(settings, sessions).read_text() == first
    path.unlink()
    assert bootstrap(settings, sessions).read_text() != first


def test_alembic_config_keeps_percent_in_urls() -> None:
    """A URL-encoded password (%40 is '@') must survive Alembic's configparser."""
    from dreamlake.controlplane.db import alembic_config
    from sqlalchemy import create_engine

    engine = create_engine("postgresql+psycopg2://u:p%40ss@127.0.0.1:1/db")
    cfg = alembic_config(engine)
    assert cfg.get_main_option("sqlalchemy.url") == "postgresql+psycopg2://u:p%40ss@127.0.0.1:1/db"


def test_a_claim_sqlite_refuses_as_locked_tries_again_instead_of_failing(
    tmp_path: Path,
) -> None:
    """Under 10,000 daemons SQLite refused a claim's UPDATE with "database is locked"
    within a second of it starting (well inside the 30 s busy timeout: a write that
    lost a race with another connection's commit), and the poll was answered 500
    (benchmarks/README.md). The refusal is raised here, once, where it came then
    (SQLite gives it only under such a race); the claim rolls back, tries again and
    gets the item."""
    import sqlite3

    from dreamlake.controlplane.server import store
    from dreamlake.controlplane.server.schemas import WorkerIn, WorkIn
    from sqlalchemy import event

    settings = Settings(data_dir=tmp_path)
    engine = make_engine(settings.database_url())
    run_migrations(engine)
    sessions = make_sessionmaker(engine)
    bootstrap(settings, sessions)
    with sessions() as session:
        ns_id = int(session.execute(text("SELECT id FROM namespaces")).scalars().first())
        worker, _ = store.register(session, ns_id, WorkerIn(provider_name="p", instance_id="i"))
        worker_id = worker.id
        item = store.submit(session, ns_id, "p", WorkIn(command="true"))
    refused: list[str] = []

    @event.listens_for(engine, "before_cursor_execute")
    def locked_once(*args: object) -> None:  # conn, cursor, statement, ...
        statement = str(args[2])
        if statement.startswith("UPDATE work_items") and not refused:
            refused.append(statement)
            raise sqlite3.OperationalError("database is locked")

    with sessions() as session:
        row = store.find_worker(session, ns_id, worker_id)
        assert row is not None
        claimed = store.try_claim(session, row)
    assert refused
    assert claimed is not None and claimed.id == item.id and claimed.state == "running"
    engine.dispose()
