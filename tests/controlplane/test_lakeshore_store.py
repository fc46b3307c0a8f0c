"""The store underneath the API, in process: migrations to ``0001_core`` (and every
head), bootstrap idempotence, the SQLite WAL journal."""

from __future__ import annotations

from pathlib import Path

from dreamlake.controlplane.db import make_engine, make_sessionmaker, run_migrations, sqlite_url
from dreamlake.controlplane.server.bootstrap import AdminToken, bootstrap
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


def test_bootstrap_keeps_a_valid_token_and_replaces_a_lost_one_but_not_another_servers(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    engine = make_engine(settings.database_url())
    run_migrations(engine)
    sessions = make_sessionmaker(engine)
    path = bootstrap(settings, sessions).path
    first = path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600
    assert bootstrap(settings, sessions) == AdminToken(path)
    assert path.read_text() == first
    # the file lost: the token this server minted into it does not stop a new one
    path.unlink()
    assert bootstrap(settings, sessions) == AdminToken(path)
    assert path.read_text() != first
    # another server's data dir holding a live one does: a replica mints none
    replica = Settings(data_dir=tmp_path / "replica", db_url=settings.database_url())
    (tmp_path / "replica").mkdir()
    made = bootstrap(replica, sessions)
    assert made.path == replica.admin_token_file and not made.path.exists()
    assert made.elsewhere is not None and str(path) in made.elsewhere


def test_alembic_config_keeps_percent_in_urls() -> None:
    """A URL-encoded password (%40 is '@') must survive Alembic's configparser."""
    from dreamlake.controlplane.db import alembic_config
    from sqlalchemy import create_engine

    engine = create_engine("postgresql+psycopg://u:p%40ss@127.0.0.1:1/db")
    cfg = alembic_config(engine)
    assert cfg.get_main_option("sqlalchemy.url") == "postgresql+psycopg://u:p%40ss@127.0.0.1:1/db"


def test_a_result_still_open_does_not_go_back_to_the_pool_with_its_snapshot(
    tmp_path: Path,
) -> None:
    """A result read part-way and kept alive past its session (a traceback holding the
    frame does that) leaves its SQLite statement open, and with it the snapshot it read
    from: Python 3.11's ``sqlite3`` does not reset statements on rollback. The pool
    closes the connection's cursors when it takes the connection back, so the next
    session sees what was committed since and can write at once."""
    engine = make_engine(sqlite_url(tmp_path), 1, busy_seconds=5)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (n INTEGER)"))
        conn.execute(text("INSERT INTO t VALUES (1), (2), (3)"))
    sessions = make_sessionmaker(engine)
    held = []
    for _ in range(engine.pool.size()):  # every pooled connection keeps a result open
        session = sessions()
        result = session.execute(text("SELECT n FROM t"))
        assert next(iter(result))[0] == 1
        held.append((session, result))
    for session, _result in held:
        session.close()

    other = make_engine(sqlite_url(tmp_path), 1)
    with other.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (4)"))
    other.dispose()

    with sessions() as session:
        assert session.execute(text("SELECT count(*) FROM t")).scalar() == 4
        session.execute(text("INSERT INTO t VALUES (5)"))  # not "database is locked"
        session.commit()
    assert held  # the results stayed alive throughout
