"""Alembic environment: runs on the connection handed in by ``db.run_migrations``
(``config.attributes["connection"]``) or on ``sqlalchemy.url``."""

from __future__ import annotations

import contextlib

from alembic import context
from dreamlake.controlplane import models as _core_models  # noqa: F401  (fills Base.metadata)
from dreamlake.controlplane.db import Base, normalize_url
from sqlalchemy import create_engine

with contextlib.suppress(ImportError):
    from dreamlake.controlplane.registry import models as _registry_models  # noqa: F401

config = context.config
target_metadata = Base.metadata


def _run(connection: object) -> None:
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=target_metadata,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = normalize_url(config.get_main_option("sqlalchemy.url") or "")
    engine = create_engine(url)
    with engine.begin() as conn:
        _run(conn)
