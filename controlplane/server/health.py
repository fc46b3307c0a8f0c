"""The readiness probe's database check, on a thread of its own.

``/readyz`` must answer while the shared thread pool is busy (a flood, a slow
query), so its ``SELECT 1`` runs on one dedicated thread, bounded in time: a
database that does not answer within :data:`READY_TIMEOUT` seconds is not ready.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

READY_TIMEOUT = 5.0


def _executor(app: Any) -> ThreadPoolExecutor:
    pool: ThreadPoolExecutor | None = getattr(app.state, "ready_pool", None)
    if pool is None:
        pool = app.state.ready_pool = ThreadPoolExecutor(1, thread_name_prefix="readyz")
    return pool


def _select_one(engine: Any) -> None:
    from sqlalchemy import text

    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


async def database_ready(app: Any, timeout: float = READY_TIMEOUT) -> str | None:
    """None when the database answers ``SELECT 1`` in time, else why not."""
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(_executor(app), _select_one, app.state.engine)
    try:
        await asyncio.wait_for(asyncio.shield(future), timeout)
    except TimeoutError:
        return f"the database did not answer within {timeout:g} s"
    except Exception as exc:  # the type only: a driver's text may carry the URL
        return f"database unreachable ({type(exc).__name__})"
    return None
