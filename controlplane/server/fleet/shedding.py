"""Shedding load with a clear answer: ``503`` with ``Retry-After`` instead of a
connection the kernel drops or a request that waits past its client's timeout.

:class:`Shed` is the outermost ASGI middleware. It answers 503 (JSON ``{"error":
"overloaded", "detail"}``, ``Retry-After`` in whole seconds, ``Connection: close``)
when either

* the server holds ``max_connections`` connections (uvicorn's own count, handed
  over by ``lakeshore serve``): one more would bring it near its open-files limit,
  where ``accept`` fails and the kernel's listen queue overflows; or
* ``max_pending`` requests are in flight that are not long-polls (a held poll, or a
  ``GET … ?wait=``, costs an idle coroutine; the others queue for threads and the
  database); or
* the oldest of those has been in flight ``max_queue_seconds`` while as many are in
  flight as there are threads to serve them (``busy_at``, the pool's size): the
  server is not keeping up, and a request taken now would queue past its client's
  timeout (a fleet registering at once: each retry after a timeout only adds to the
  queue). With fewer in flight a thread is free, so one slow request (a large
  listing) does not turn every other caller away. Heartbeats are not shed for
  this: the hot path answers them without a thread.

``Retry-After`` is drawn at random from a range (a few seconds for a burst of
requests, longer for connections, which free up more slowly), so the clients it
turns away do not come back together; the daemon waits at least that, plus its
own jitter (``Settings.retry_after_seconds`` fixes it instead). ``/healthz`` is
never shed.

When the server starts shutting down (``app.state.draining`` is set, see
``serving``), every long-poll held open answers :func:`restarting`: a 503 whose
``Retry-After`` spreads the fleet's return, rather than being cut off when
uvicorn's grace period ends (which clients saw as a 500 or a reset). Off (``0``) for either bound, it never sheds
on that one.
"""

from __future__ import annotations

import random
import time
from typing import Any

from ..problem import problem_bytes, problem_headers

RETRY_PENDING = (1, 4)
RETRY_CONNECTIONS = (5, 20)
RETRY_RESTART = (1, 10)
EXEMPT = ("/healthz",)


def overloaded(
    why: str, retry: tuple[int, int], fixed: int | None = None, error: str = "overloaded"
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The 503 every shed request gets: status, headers and a JSON body, with a
    ``Retry-After`` drawn from ``retry`` (or ``fixed``) and ``Connection: close``."""
    seconds = fixed if fixed is not None else random.randint(*retry)
    body = problem_bytes(503, error, f"{why}; retry after {seconds}s")
    headers = problem_headers(
        body, (b"retry-after", str(seconds).encode()), (b"connection", b"close")
    )
    return 503, headers, body


async def send_503(send: Any, answer: tuple[int, list[tuple[bytes, bytes]], bytes]) -> None:
    status, headers, body = answer
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def restarting(fixed: int | None = None) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """What a held long-poll gets when the server starts shutting down: the daemons
    behind it come back spread over ``RETRY_RESTART`` (plus their own jitter)
    instead of all at once, and not cut off mid-answer."""
    return overloaded("the server is shutting down", RETRY_RESTART, fixed, "unavailable")


def open_files_limit(raise_soft: bool = True) -> int:
    """This process's open-files limit, raising the soft limit to the hard one first."""
    try:
        import resource
    except ImportError:  # not POSIX
        return 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if raise_soft and hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError):
            pass
    return int(soft) if soft != resource.RLIM_INFINITY else 1 << 20


def connection_budget(open_files: int) -> int:
    """Connections the server takes before shedding: its open-files limit less a
    reserve for the database, logs, the listen socket and the 503s themselves."""
    reserve = max(128, open_files // 20)
    return max(16, open_files - reserve)


def _is_long_poll(scope: dict[str, Any]) -> bool:
    return scope.get("method") == "GET" and b"wait=" in scope.get("query_string", b"")


def _is_heartbeat(scope: dict[str, Any]) -> bool:
    return scope.get("method") == "POST" and str(scope.get("path", "")).endswith("/heartbeat")


class Shed:
    """Pure ASGI middleware; see the module's docstring."""

    def __init__(
        self,
        app: Any,
        *,
        state: Any,
        max_connections: int = 0,
        max_pending: int = 0,
        retry_after: int | None = None,
        max_queue_seconds: float = 0.0,
        busy_at: int = 1,
    ) -> None:
        self.app = app
        self.state = state  # app.state: ``connections`` is set by ``lakeshore serve``
        self.max_connections = max_connections
        self.max_pending = max_pending
        self.retry_after = retry_after  # fixed seconds instead of a random draw
        self.max_queue_seconds = max_queue_seconds
        self.busy_at = max(1, busy_at)  # in flight at once before age counts
        self._started: dict[int, float] = {}  # in-flight requests by arrival, oldest first
        self._next = 0
        self.shed = 0  # 503s sent so far

    def _overloaded(self, scope: dict[str, Any]) -> tuple[str, str, tuple[int, int]] | None:
        """Why ``scope`` is shed now, if it is: the reason counted in
        ``lakeshore_shed_total``, the sentence and the Retry-After range."""
        connections = getattr(self.state, "connections", None)
        if (
            self.max_connections
            and connections is not None
            and len(connections) > self.max_connections
        ):
            return (
                "connections",
                f"the server holds {len(connections)} connections (at most {self.max_connections})",
                RETRY_CONNECTIONS,
            )
        if _is_long_poll(scope):
            return None
        if self.max_pending and self.pending >= self.max_pending:
            return (
                "in_flight",
                f"{self.pending} requests are in flight (at most {self.max_pending})",
                RETRY_PENDING,
            )
        if self.max_queue_seconds and self.pending >= self.busy_at and not _is_heartbeat(scope):
            waited = time.monotonic() - next(iter(self._started.values()))
            if waited >= self.max_queue_seconds:
                return (
                    "queue_time",
                    f"the oldest request in flight has waited {waited:.1f}s "
                    f"(at most {self.max_queue_seconds:g}s)",
                    RETRY_PENDING,
                )
        return None

    @property
    def pending(self) -> int:
        return len(self._started)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") in EXEMPT:
            await self.app(scope, receive, send)
            return
        over = self._overloaded(scope)
        if over is not None:
            await self._refuse(send, *over)
            return
        if _is_long_poll(scope):
            await self.app(scope, receive, send)
            return
        key = self._next
        self._next += 1
        self._started[key] = time.monotonic()
        try:
            await self.app(scope, receive, send)
        finally:
            del self._started[key]

    async def _refuse(self, send: Any, reason: str, why: str, retry: tuple[int, int]) -> None:
        self.shed += 1
        metrics = getattr(self.state, "metrics", None)  # lakeshore_shed_total (metrics/)
        if metrics is not None:
            metrics.shed(reason)
        await send_503(send, overloaded(f"shedding load: {why}", retry, self.retry_after))
