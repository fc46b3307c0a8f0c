"""The SQL store: the declarative ``Base`` every table derives from, the engine and
sessions, and the migration runner.

SQLite (a file, WAL journal) by default; PostgreSQL by URL. Tables are created only
by Alembic migrations (``controlplane/migrations/versions`` and, when present,
``controlplane/registry/migrations``), never by ``metadata.create_all``; an empty
SQLite file gets, in one step, exactly what they make of one (``dbsnapshot.py``).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import DateTime, Engine, create_engine, event, make_url, text
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.types import TypeDecorator

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
VERSIONS_DIR = MIGRATIONS_DIR / "versions"
REGISTRY_VERSIONS_DIR = Path(__file__).parent / "registry" / "migrations"


class Base(DeclarativeBase):
    """The one metadata all control-plane tables share (core and registry)."""


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every backend (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def sqlite_url(data_dir: Path) -> str:
    return f"sqlite:///{(data_dir / 'lakeshore.db').as_posix()}"


def normalize_url(url: str) -> str:
    """``postgres://`` and ``postgresql://`` both mean psycopg (3), the ``postgres``
    extra's driver; a URL naming its driver is kept as it is."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def redact_url(text: str, url: str) -> str:
    """``text`` with ``url``'s password masked (for messages and logs): the URL shown
    as SQLAlchemy renders it with the password hidden, any other spelling of the
    password as ``***``."""
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    if not password:
        return text
    try:
        shown = make_url(url).render_as_string(hide_password=True)
    except Exception:
        shown = url.replace(password, "***")
    text = text.replace(url, shown)
    for spelling in {password, unquote(password)}:
        text = text.replace(spelling, "***")
    return text


UNREADABLE = "__unreadable__"


def safe_json_loads(text: str | bytes) -> Any:
    """JSON columns' reader: a stored value that cannot be parsed (nested past the
    parser's recursion limit, say) reads as ``{UNREADABLE: why}`` instead of failing
    the whole query, so one bad row never breaks a listing of the others."""
    import json

    try:
        return json.loads(text)
    except (RecursionError, ValueError) as exc:
        return {UNREADABLE: type(exc).__name__}


POOL_SPARE = 4
"""Connections beyond the thread count: the heartbeat writer and start-up work."""


def _sqlite_connection() -> type:
    """An ``sqlite3.Connection`` that knows which of its cursors are still alive."""
    import sqlite3
    import weakref

    class Connection(sqlite3.Connection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.cursors: weakref.WeakSet[sqlite3.Cursor] = weakref.WeakSet()

        def cursor(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            made = super().cursor(*args, **kwargs)
            self.cursors.add(made)
            return made

        def close_cursors(self) -> None:
            for cursor in list(self.cursors):
                cursor.close()
            self.cursors.clear()

    return Connection


def make_engine(url: str, pool_size: int = 8, *, busy_seconds: int = 30) -> Engine:
    """An engine whose pool holds ``pool_size + POOL_SPARE`` connections and never
    overflows (the server sizes its thread pool to ``pool_size``)."""
    url = normalize_url(url)
    size = max(1, pool_size) + POOL_SPARE
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={
                "check_same_thread": False,
                "timeout": busy_seconds,
                "factory": _sqlite_connection(),
            },
            pool_size=size,
            max_overflow=0,
            json_deserializer=safe_json_loads,
        )

        @event.listens_for(engine, "checkin")
        def _close_cursors(dbapi_conn: Any, _record: Any) -> None:
            # A result read part-way and still alive (a traceback holding its frame
            # is enough) keeps its statement open, and with it the snapshot it read
            # from: Python's sqlite3 does not reset statements on rollback. Carried to
            # the next session, that snapshot hides every later commit from its reads
            # and gets its writes refused as "database is locked" at once.
            if dbapi_conn is not None:
                dbapi_conn.close_cursors()

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute(f"PRAGMA busy_timeout={int(busy_seconds * 1000)}")
            cur.close()

        return engine
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_size=size,
        max_overflow=0,
        json_deserializer=safe_json_loads,
    )


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def version_locations() -> list[Path]:
    locations = [VERSIONS_DIR]
    if REGISTRY_VERSIONS_DIR.is_dir():
        locations.append(REGISTRY_VERSIONS_DIR)
    return locations


def alembic_config(engine: Engine | None = None) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("path_separator", "os")
    cfg.set_main_option("version_locations", os.pathsep.join(str(p) for p in version_locations()))
    if engine is not None:
        # Alembic's config goes through configparser, where % starts an interpolation:
        # escape it, or URL-encoded passwords and socket paths break `serve`.
        url = engine.url.render_as_string(hide_password=False)
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def run_migrations(engine: Engine) -> None:
    """Upgrade the database to every head (core and registry branches).

    A database already at every head is left as it is, and an empty SQLite file is
    made in one step from what the migrations make of one, both without Alembic
    while the snapshot of that is current (``dbsnapshot.py``); anything else is
    migrated by Alembic."""
    from . import dbsnapshot

    snapshot = dbsnapshot.current_snapshot(version_locations())
    if snapshot is not None:
        with engine.connect() as conn:
            at_heads = dbsnapshot.stamped_heads(conn) == set(snapshot.HEADS)
            conn.rollback()
        if at_heads:
            return
        if engine.dialect.name == "sqlite":
            with engine.begin() as conn:
                # the write lock first: a second server starting on the same empty
                # file waits here, then finds the tables made
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                if dbsnapshot.sqlite_is_empty(conn):
                    dbsnapshot.load_sqlite(conn, snapshot)
                    return
    upgrade_with_alembic(engine)


def upgrade_with_alembic(engine: Engine) -> None:
    """Replay every migration the database lacks, up to every head."""
    from alembic import command

    cfg = alembic_config(engine)
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            # replicas starting together: one migrates, the others wait, then find
            # nothing left to do
            conn.execute(text("SELECT pg_advisory_xact_lock(7878001)"))
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "heads")


def pg_connect_kwargs(url: Any) -> dict[str, Any]:
    """psycopg's connection keyword arguments for a SQLAlchemy URL (or its string)."""
    from sqlalchemy import make_url

    url = make_url(url)
    return {
        "host": url.host,
        "port": url.port,
        "user": url.username,
        "password": url.password,
        "dbname": url.database,
        **{k: v for k, v in url.query.items() if isinstance(v, str)},
    }
