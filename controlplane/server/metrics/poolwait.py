"""How long a checkout waited for a connection from the database pool, observed into
``lakeshore_database_pool_wait_seconds``: the pool's own ``_do_get`` (where a
checkout blocks when every connection is in use) is timed, on this engine's pool and
on every pool the engine makes after a ``dispose()``. Two clock reads per checkout."""

from __future__ import annotations

import time
from typing import Any

_MARK = "_lakeshore_timed"


def _timed(pool: Any, histogram: Any) -> None:
    inner = getattr(pool, "_do_get", None)
    if inner is None or getattr(pool, _MARK, False):
        return

    def do_get() -> Any:
        started = time.perf_counter()
        try:
            return inner()
        finally:
            histogram.observe(time.perf_counter() - started)

    pool._do_get = do_get
    setattr(pool, _MARK, True)


def time_checkouts(engine: Any, histogram: Any) -> None:
    """Observe every checkout's wait from ``engine``'s pool into ``histogram``."""
    from sqlalchemy import event

    _timed(engine.pool, histogram)

    @event.listens_for(engine, "engine_disposed")
    def _again(disposed: Any) -> None:
        _timed(disposed.pool, histogram)
