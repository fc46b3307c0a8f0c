"""Write ``controlplane/migrations/sqlite_schema.py`` again, from a real migration run
(after adding or changing a migration): ``python -m
dreamlake.controlplane.dbsnapshot_make``. See ``dbsnapshot.py``."""

from __future__ import annotations

from pathlib import Path

from . import db, dbsnapshot


def made_by_migrations() -> str:
    """The snapshot module's text, from a real migration run on an empty SQLite file.

    Two runs can differ in the order of a few statements and of the constraint
    clauses of a table Alembic rebuilds (it keeps those in sets); the tables, their
    columns (in order), indexes and constraints are the same every time."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        engine = db.make_engine(db.sqlite_url(Path(tmp)))
        try:
            db.upgrade_with_alembic(engine)
            with engine.connect() as conn:
                schema = dbsnapshot.sqlite_schema(conn)
                heads = sorted(dbsnapshot.stamped_heads(conn) or ())
        finally:
            engine.dispose()
    # SQLite's own (sqlite_sequence, sqlite_autoindex_*) come with the tables
    statements = [
        sql for _type, name, _table, sql in schema if sql and not name.startswith("sqlite_")
    ]
    return dbsnapshot.render(statements, heads, dbsnapshot.digest(db.version_locations()))


def write_snapshot() -> Path:
    """Write the snapshot again (after adding or changing a migration)."""
    dbsnapshot.SNAPSHOT_FILE.write_text(made_by_migrations())
    return dbsnapshot.SNAPSHOT_FILE


if __name__ == "__main__":  # python -m dreamlake.controlplane.dbsnapshot_make
    print(write_snapshot())
