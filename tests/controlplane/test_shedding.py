"""The server's load shedding (controlplane/server/fleet/shedding.py) as ASGI: 503 with
Retry-After and Connection: close beyond the connection budget or the requests in
flight; long-polls and /healthz are not counted or shed; Retry-After is spread."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

from dreamlake.controlplane.server.fleet.serving import effective_backlog, somaxconn
from dreamlake.controlplane.server.fleet.shedding import (
    RETRY_CONNECTIONS,
    Shed,
    connection_budget,
)
from dreamlake.controlplane.server.settings import MIN_KEEP_ALIVE_SECONDS, Settings


def _call(shed: Shed, path: str = "/api/x", method: str = "POST", query: bytes = b"") -> Any:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "path": path, "method": method, "query_string": query}
    asyncio.run(shed(scope, receive, send))
    return sent


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def test_beyond_the_connection_budget_503_with_retry_after_and_close() -> None:
    state = SimpleNamespace(connections=set(range(11)))
    shed = Shed(_ok, state=state, max_connections=10)
    start, body = _call(shed)
    assert start["status"] == 503
    headers = dict(start["headers"])
    assert headers[b"connection"] == b"close"
    lo, hi = RETRY_CONNECTIONS
    assert lo <= int(headers[b"retry-after"]) <= hi
    doc = json.loads(body["body"])
    assert doc["error"] == "overloaded" and "11 connections" in doc["detail"]
    assert _call(shed, "/healthz", "GET")[0]["status"] == 200  # never shed
    state.connections = set(range(10))
    assert _call(shed)[0]["status"] == 200


def test_retry_after_is_spread_so_the_refused_do_not_return_together() -> None:
    shed = Shed(_ok, state=SimpleNamespace(connections=set(range(5))), max_connections=1)
    seen = {int(dict(_call(shed)[0]["headers"])[b"retry-after"]) for _ in range(200)}
    assert len(seen) >= 8


def test_requests_in_flight_beyond_the_bound_are_shed_long_polls_are_not() -> None:
    gate = asyncio.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        await gate.wait()
        await _ok(scope, receive, send)

    shed = Shed(slow, state=SimpleNamespace(), max_pending=2, retry_after=3)

    async def run() -> list[int]:
        statuses: list[int] = []

        async def one(method: str, query: bytes = b"") -> None:
            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": b""}

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    statuses.append(message["status"])
                    if message["status"] == 503:
                        assert dict(message["headers"])[b"retry-after"] == b"3"

            scope = {"type": "http", "path": "/api/x", "method": method, "query_string": query}
            await shed(scope, receive, send)

        tasks = [asyncio.ensure_future(one("POST")) for _ in range(2)]
        tasks += [asyncio.ensure_future(one("GET", b"wait=20")) for _ in range(3)]
        await asyncio.sleep(0.05)
        await one("POST")  # the third in flight: shed at once
        assert statuses == [503]
        gate.set()
        await asyncio.gather(*tasks)
        return statuses

    statuses = asyncio.run(run())
    assert sorted(statuses) == [200] * 5 + [503]
    assert shed.pending == 0 and shed.shed == 1


def test_the_budget_leaves_a_reserve_below_the_open_files_limit() -> None:
    assert connection_budget(20_000) == 19_000
    assert connection_budget(1024) == 1024 - 128


def test_keep_alive_outlasts_the_heartbeat_interval_and_the_longest_poll() -> None:
    s = Settings(data_dir=None, live_seconds=30)  # type: ignore[arg-type]
    assert s.keep_alive >= MIN_KEEP_ALIVE_SECONDS > 60 and s.keep_alive > s.heartbeat_seconds
    slow = Settings(data_dir=None, live_seconds=300)  # type: ignore[arg-type]
    assert slow.keep_alive == 3 * slow.heartbeat_seconds


def test_the_backlog_asked_is_capped_by_somaxconn() -> None:
    cap = somaxconn()
    assert effective_backlog(16384) == (16384 if cap is None else min(16384, cap))


def test_once_the_oldest_request_has_waited_too_long_new_ones_are_shed() -> None:
    """A server not keeping up (a fleet registering at once) answers 503 at once
    rather than queueing requests past their clients' timeouts; heartbeats, which
    the hot path answers without a thread, and long-polls still pass."""
    gate = asyncio.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/api/slow":
            await gate.wait()
        await _ok(scope, receive, send)

    shed = Shed(slow, state=SimpleNamespace(), max_queue_seconds=0.2)

    async def run() -> dict[str, int]:
        got: dict[str, int] = {}

        async def one(name: str, path: str, method: str = "POST", query: bytes = b"") -> None:
            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": b""}

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    got[name] = message["status"]

            scope = {"type": "http", "path": path, "method": method, "query_string": query}
            await shed(scope, receive, send)

        stuck = asyncio.ensure_future(one("stuck", "/api/slow"))
        await asyncio.sleep(0.05)
        await one("early", "/api/x")  # the oldest has waited 0.05 s: taken
        await asyncio.sleep(0.25)
        await one("late", "/api/x")
        await one("beat", "/api/namespaces/n/workers/w/heartbeat")
        await one("poll", "/api/namespaces/n/workers/w/work", "GET", b"wait=20")
        gate.set()
        await stuck
        await one("after", "/api/x")
        return got

    got = asyncio.run(run())
    assert got == {"early": 200, "late": 503, "beat": 200, "poll": 200, "stuck": 200, "after": 200}


def test_one_slow_request_does_not_shed_the_others_while_threads_are_free() -> None:
    """Age counts only once as many requests are in flight as the pool has threads
    (``busy_at``): one slow request in flight on a pool of 4 leaves threads free, so
    the others are taken; four stuck at once and the fifth is shed."""
    gate = asyncio.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/api/slow":
            await gate.wait()
        await _ok(scope, receive, send)

    shed = Shed(slow, state=SimpleNamespace(), max_queue_seconds=0.1, busy_at=4)

    async def one(path: str) -> int:
        got: list[int] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                got.append(message["status"])

        await shed({"type": "http", "path": path, "method": "POST"}, receive, send)
        return got[0]

    async def run() -> tuple[int, int, list[int]]:
        first = asyncio.ensure_future(one("/api/slow"))
        await asyncio.sleep(0.2)
        alone = await one("/api/x")  # one slow request in flight, 3 threads free
        more = [asyncio.ensure_future(one("/api/slow")) for _ in range(3)]
        await asyncio.sleep(0.05)
        full = await one("/api/x")  # 4 in flight, the oldest past 0.1 s
        gate.set()
        return alone, full, [await f for f in (first, *more)]

    alone, full, stuck = asyncio.run(run())
    assert (alone, full, stuck) == (200, 503, [200, 200, 200, 200])


def test_serving_gives_the_event_loop_the_gil_back_within_a_millisecond(
    monkeypatch: Any,
) -> None:
    """``lakeshore serve`` sets a 1 ms thread switch interval before uvicorn starts
    (a pool thread holding the GIL otherwise keeps it up to 5 ms per turn)."""
    import sys

    import uvicorn
    from dreamlake.controlplane.server.fleet import serving

    seen: list[float] = []
    monkeypatch.setattr(
        uvicorn.Server, "run", lambda self, *a, **k: seen.append(sys.getswitchinterval())
    )
    before = sys.getswitchinterval()
    try:
        app = SimpleNamespace(state=SimpleNamespace())
        serving.run(
            app, Settings(), host="127.0.0.1", port=0, log_level="warning", access_log=False
        )
    finally:
        sys.setswitchinterval(before)
    assert seen == [serving.SWITCH_INTERVAL] and serving.SWITCH_INTERVAL <= 0.001


def test_the_shutdown_grace_is_the_setting(monkeypatch: Any) -> None:
    """Held polls are answered 503 when shutdown starts; the grace before uvicorn
    cancels what still runs (a 500 each) is ``LAKESHORE_SHUTDOWN_GRACE_SECONDS``,
    2 s unless set (whole seconds, rounded up)."""
    import sys

    import uvicorn
    from dreamlake.controlplane.server.fleet import serving

    graces: list[int] = []
    monkeypatch.setattr(
        uvicorn.Server,
        "run",
        lambda self, *a, **k: graces.append(self.config.timeout_graceful_shutdown),
    )
    before = sys.getswitchinterval()
    monkeypatch.setenv("LAKESHORE_SHUTDOWN_GRACE_SECONDS", "2.5")
    try:
        for settings in (Settings(), Settings.from_env()):
            app = SimpleNamespace(state=SimpleNamespace())
            serving.run(
                app, settings, host="127.0.0.1", port=0, log_level="warning", access_log=False
            )
    finally:
        sys.setswitchinterval(before)
    assert graces == [2, 3]
