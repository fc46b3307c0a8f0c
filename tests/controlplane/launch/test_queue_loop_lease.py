"""One reconcile loop per database: two real ``lakeshore serve`` over one PostgreSQL
share the ``queues`` lease; one holds and renews it, the other waits, and when the
holder dies without letting go the other takes over once the lease runs out."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.needs_postgres]


def _lease(url: str) -> tuple[str, Any] | None:
    import psycopg

    conn = psycopg.connect(url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT holder, expires_at FROM leases WHERE name = 'queues'")
            row = cur.fetchone()
            return (row[0], row[1]) if row else None
    finally:
        conn.close()


def _pid(holder: str) -> int:
    return int(holder.split(":")[1])


def test_two_servers_one_loop(postgres: Any, start_server: Any) -> None:
    url = postgres.new_database()
    first = start_server(db_url=url)
    second = start_server(db_url=url)
    servers = {s.proc.pid: s for s in (first, second)}

    deadline = time.monotonic() + 20
    while (got := _lease(url)) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert got is not None
    holder, expires = got
    assert _pid(holder) in servers

    # the holder keeps renewing it; nobody else takes it while it lives
    time.sleep(5)
    again = _lease(url)
    assert again is not None and again[0] == holder and again[1] > expires

    # the holder dies without letting go: the other one takes over after expiry
    servers[_pid(holder)].kill()
    other = next(pid for pid in servers if pid != _pid(holder))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now = _lease(url)
        if now is not None and _pid(now[0]) == other:
            break
        time.sleep(0.3)
    else:
        pytest.fail(f"the lease was not taken over: {_lease(url)}")
