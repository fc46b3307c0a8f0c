"""Every migration head applies on a fresh database (SQLite, and a throwaway
PostgreSQL), and leaves the tables the models expect: no table, column or index
that one side has and the other lacks (the heads were written on separate lines of
work, each after ``0002_registry``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Float


def _differences(url: str) -> list[Any]:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from dreamlake.controlplane import db
    from dreamlake.controlplane import models as _core  # noqa: F401
    from dreamlake.controlplane.capacity import models as _capacity  # noqa: F401
    from dreamlake.controlplane.launch import models as _launch  # noqa: F401
    from dreamlake.controlplane.registry import models as _registry  # noqa: F401

    engine = db.make_engine(url)
    try:
        db.run_migrations(engine)
        with engine.connect() as conn:
            found = compare_metadata(MigrationContext.configure(conn), db.Base.metadata)
    finally:
        engine.dispose()
    return [d for d in found if not _same_float(d)]


def _same_float(diff: Any) -> bool:
    """FLOAT and DOUBLE: one type on both backends (REAL / double precision)."""
    if not (isinstance(diff, list) and diff and isinstance(diff[0], tuple)):
        return False
    d = diff[0]
    return d[0] == "modify_type" and isinstance(d[-2], Float) and isinstance(d[-1], Float)


def test_sqlite_heads_match_the_models(tmp_path: Path) -> None:
    assert _differences(f"sqlite:///{tmp_path / 'fresh.db'}") == []


@pytest.mark.needs_postgres
def test_postgres_heads_match_the_models(postgres: Any) -> None:
    assert _differences(postgres.new_database()) == []
