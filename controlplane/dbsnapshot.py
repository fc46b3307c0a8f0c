"""A fresh SQLite database in one step, and a database already at every head known
without Alembic.

Replaying every migration on an empty SQLite file costs a server's start more than
the rest of its database work (importing Alembic alone is half of it). What the
migrations make of an empty SQLite file is always the same: the ``CREATE`` statements
SQLite keeps in ``sqlite_master`` and one ``alembic_version`` row per head.
``controlplane/migrations/sqlite_schema.py`` holds those, as the migrations made them
(written by ``python -m
dreamlake.controlplane.dbsnapshot_make``), with a digest of the migration files they were
made from (one run's text: two runs of the migrations can order a few statements,
and the constraint clauses of a table Alembic rebuilds, differently; nothing else
differs). While the files still have that digest, an empty SQLite file gets those
statements, verbatim, in one transaction, and any database whose ``alembic_version``
already names exactly those heads is left as it is; otherwise (a migration added or
changed and the snapshot not written again, or a database anywhere between) Alembic
migrates as before. ``tests/controlplane/test_dbsnapshot.py`` holds the snapshot to
what the migrations make.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SNAPSHOT_FILE = MIGRATIONS_DIR / "sqlite_schema.py"


def migration_files(locations: list[Path]) -> list[Path]:
    """Every file that decides what a migration run makes: ``env.py`` and each
    revision."""
    files = [MIGRATIONS_DIR / "env.py"]
    for location in locations:
        files += sorted(p for p in location.glob("*.py") if p.name != "__init__.py")
    return files


def digest(locations: list[Path]) -> str:
    """A digest of the migration files' names and bytes."""
    h = hashlib.sha256()
    for path in migration_files(locations):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def current_snapshot(locations: list[Path]) -> Any:
    """The snapshot module when it was made from these very migration files, else
    ``None``."""
    try:
        from .migrations import sqlite_schema
    except ImportError:
        return None
    if digest(locations) != sqlite_schema.DIGEST:
        return None
    return sqlite_schema


def stamped_heads(conn: Any) -> set[str] | None:
    """The revisions ``alembic_version`` names (``None``: no such table)."""
    from sqlalchemy import text

    if not conn.dialect.has_table(conn, "alembic_version"):
        return None
    return {row[0] for row in conn.execute(text("SELECT version_num FROM alembic_version"))}


def sqlite_is_empty(conn: Any) -> bool:
    return not conn.exec_driver_sql("SELECT 1 FROM sqlite_master LIMIT 1").first()


def load_sqlite(conn: Any, snapshot: Any) -> None:
    """Make the snapshot's tables, indexes and version rows on ``conn`` (an empty
    SQLite database, in the caller's transaction)."""
    for statement in snapshot.STATEMENTS:
        conn.exec_driver_sql(statement)
    for head in snapshot.HEADS:
        conn.exec_driver_sql("INSERT INTO alembic_version (version_num) VALUES (?)", (head,))


def sqlite_schema(conn: Any) -> list[tuple[str, str, str, str | None]]:
    """``sqlite_master`` as SQLite keeps it: type, name, table and statement, in the
    order they were made."""
    return [
        (row[0], row[1], row[2], row[3])
        for row in conn.exec_driver_sql(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid"
        )
    ]


def render(statements: list[str], heads: list[str], made_from: str) -> str:
    lines = [
        '"""What the migrations make of an empty SQLite database (written by',
        "``python -m dreamlake.controlplane.dbsnapshot_make``; do not edit).",
        "",
        "``DIGEST`` is the digest of the migration files it was made from; while they",
        'still have it, a fresh SQLite database is made from these statements."""',
        "",
        f"DIGEST = {made_from!r}",
        "HEADS = (",
        *(f"    {head!r}," for head in sorted(heads)),
        ")",
        "STATEMENTS = (",
    ]
    lines += [f"    {statement!r}," for statement in statements]
    lines.append(")")
    return "\n".join(lines) + "\n"
