"""Refuse a request that carries a body and no credential from its headers alone.

A ``POST`` (or any request with a body) to a route that needs a token, sent with
no ``Authorization: Bearer`` header and no client certificate (or with a token the
server has already refused: unknown, revoked or expired, which the gate too
refuses from memory), is answered 401 by the connection's protocol as soon as its
headers are parsed: no ASGI task, no
middleware, not a byte of its body kept, and the connection closed after the
answer so the rest of the body is never read (the kernel drops it). The answer
is the one :class:`~.gate.Gate` gives (a problem, ``WWW-Authenticate: Bearer``,
``Connection: close``, ``X-Request-ID``, ``Server-Timing``), and it is counted and
logged as the gate's would be (``lakeshore_token_refusals_total``, the request's
time, the access log).

The gate answers a flood of such requests without reading their bodies too, but
each costs the event loop a task and the whole middleware stack; refused here,
each costs a few dictionary look-ups. A flood's clients come back as soon as they
are answered, though, so however cheap each refusal, they would take every turn of
the event loop a ``/healthz`` (or a daemon's heartbeat) on the same port waits for.
So these refusals are **paced**: at most :data:`PACE` a second are answered (a
second's worth at once); beyond that each waits its turn, its connection held with
reading paused (nothing more of its body is read), first come first answered, up
to :data:`HOLD_AT_MOST` held connections (beyond them, answered at once). A client
that forgot its token is answered at once; a flood's clients wait, and the loop
stays free for everything else. Everything else (a token to check, a public or
session route, a request without a body) goes on to the app as before, unpaced.

:func:`refusing` wraps uvicorn's httptools protocol class (``lakeshore serve``,
``fleet/serving.py``); another protocol class is returned as it is.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections import deque
from http import HTTPStatus
from typing import Any

from ..deps import refused_of
from ..errors import ApiError
from ..identity.peer import peer_digest
from ..limits import body_length
from ..metrics.registry import refusal_reason
from ..problem import PROBLEM_JSON, problem
from ..requestlog import REQUEST_ID, _record, request_id
from . import scopes
from .tokens import hash_token

Scope = dict[str, Any]
MISSING_TOKEN = "missing bearer token (Authorization: Bearer <token>)"
"""The gate's sentence for a request without a bearer token (``gate.py``)."""
MISSING = ApiError(401, "unauthorized", MISSING_TOKEN)

PACE = 20
"""Refusals answered a second at most (and this many at once after a quiet second)."""
HOLD_AT_MOST = 1024
"""Connections held waiting for their refusal at most; beyond, answered at once."""

_access_log = logging.getLogger("lakeshore.access")


def carries_body(scope: Scope) -> bool:
    """Whether the request declares a body: ``Content-Length`` above 0, or one sent
    chunked (or a length that is not a number, which the app refuses anyway)."""
    return body_length(scope) != 0


def bearer(scope: Scope) -> str | None:
    """The request's bearer token ("" when it names none: no ``Authorization:
    Bearer <token>`` and no client certificate); None for a client certificate,
    which the gate checks."""
    for key, value in scope.get("headers", ()):
        if key == b"authorization":
            scheme, _, token = bytes(value).decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return None if peer_digest(scope) is not None else ""


@functools.lru_cache(maxsize=32)
def _problem_parts(status: int, error: str, detail: str) -> tuple[bytes, bytes]:
    """The gate's problem body, encoded as a JSON response encodes it, split where
    the request's id goes."""
    mark = "@request-id@"
    token = REQUEST_ID.set(mark)
    try:
        body = json.dumps(
            problem(status, error, detail),
            ensure_ascii=False,
            allow_nan=False,
            separators=(",", ":"),
        ).encode()
    finally:
        REQUEST_ID.reset(token)
    before, _, after = body.partition(mark.encode())
    return before, after


def answer(
    why: ApiError, rid: str, default_headers: list[tuple[bytes, bytes]], started: float
) -> bytes:
    """The gate's answer ``why`` for the request whose id is ``rid``, as the bytes of
    a whole HTTP/1.1 response (the id, :func:`~..requestlog.request_id`'s, is the
    problem's ``instance``: only ever ``A-Z a-z 0-9 . _ : - @``, nothing JSON
    escapes)."""
    before, after = _problem_parts(why.status, why.error, str(why.detail))
    raw = rid.encode("latin-1")
    body = before + raw + after
    took = (time.perf_counter() - started) * 1000
    head = b"".join(name + b": " + value + b"\r\n" for name, value in default_headers)
    challenge = b"www-authenticate: Bearer\r\n" if why.status == 401 else b""
    return b"".join(
        (
            f"HTTP/1.1 {why.status} {HTTPStatus(why.status).phrase}\r\n".encode(),
            head,
            challenge,
            b"connection: close\r\ncontent-length: ",
            str(len(body)).encode(),
            b"\r\ncontent-type: " + PROBLEM_JSON.encode(),
            b"\r\nserver-timing: app;dur=" + f"{took:.2f}".encode(),
            b"\r\nx-request-id: " + raw + b"\r\n\r\n",
            body,
        )
    )


class Refusals:
    """Which requests to refuse, and counting them; what it needs is kept from one
    refusal to the next: each path's route (up to a bound) and its metrics."""

    BOUND = 4096

    def __init__(self, state: Any, pace: float = PACE, hold: int = HOLD_AT_MOST) -> None:
        self.state = state
        self.matches: dict[tuple[str, str], scopes.Match] = {}
        self.timers: dict[tuple[str, str, str], Any] = {}
        self.refusals: dict[str, Any] = {}
        self.pace = pace
        self.hold = hold
        self.tokens = float(pace)
        self.filled = time.monotonic()
        self.held: deque[tuple[Any, Any]] = deque()  # (the refusal to send, its transport)
        self.draining: asyncio.TimerHandle | None = None

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(float(self.pace), self.tokens + (now - self.filled) * self.pace)
        self.filled = now

    def answer(self, send: Any, transport: Any) -> None:
        """Call ``send`` (the refusal) now when the pace allows, else once it does;
        meanwhile the connection's reading is paused."""
        self._refill()
        if (self.tokens >= 1 and not self.held) or len(self.held) >= self.hold:
            self.tokens = max(0.0, self.tokens - 1)
            send()
            return
        transport.pause_reading()
        self.held.append((send, transport))
        self._schedule()

    def _schedule(self) -> None:
        if self.draining is None and self.held:
            wait = max(0.0, (1 - self.tokens) / self.pace)
            self.draining = asyncio.get_running_loop().call_later(wait, self._drain)

    def _drain(self) -> None:
        self.draining = None
        self._refill()
        while self.held and self.tokens >= 1:
            send, transport = self.held.popleft()
            if transport.is_closing():  # the client gave up: nothing to answer
                continue
            self.tokens -= 1
            send()
        self._schedule()

    def refused(self, scope: Scope) -> tuple[scopes.Match, ApiError] | None:
        """The route a request asks for and the gate's refusal, when it must be
        refused before its body is read: it carries one, the route needs a token,
        and it names none (or one the server already refused: unknown, revoked or
        expired, :class:`~..deps.RefusedTokens`). None when it goes on to the app
        (so does everything before the app's route table, ``state.route_rules``,
        is built)."""
        rules = getattr(self.state, "route_rules", None)
        if rules is None or not carries_body(scope):
            return None
        token = bearer(scope)
        if token is None:
            return None
        if token:  # refused before: the gate would answer from memory too
            try:
                refused_of(self.state).check(hash_token(token))
            except ApiError as exc:
                why = exc
            else:
                return None
        else:
            why = MISSING
        key = (scope["method"], scope["path"])
        found = self.matches.get(key)
        if found is None:
            found = scopes.match(key[0], key[1], rules)
            if len(self.matches) >= self.BOUND:
                self.matches.clear()
            self.matches[key] = found
        return None if found.need in ("public", "session") else (found, why)

    def count(
        self, scope: Scope, found: scopes.Match, why: ApiError, started: float, rid: str
    ) -> None:
        """Count and log the refusal as the middlewares would have."""
        seconds = time.perf_counter() - started
        metrics = getattr(self.state, "metrics", None)
        if metrics is not None:
            from ..metrics.middleware import METHODS, UNMATCHED

            reason = refusal_reason(why.status, str(why.detail))
            counter = self.refusals.get(reason)
            if counter is None:
                counter = self.refusals[reason] = metrics.token_refusals.labels(reason)
            counter.inc()
            method = scope["method"] if scope["method"] in METHODS else "other"
            key = (method, found.template or UNMATCHED, f"{why.status // 100}xx")
            timer = self.timers.get(key)
            if timer is None:
                timer = self.timers[key] = metrics.request_seconds.labels(*key)
            timer.observe(seconds)
        if _access_log.isEnabledFor(logging.INFO):
            _record(scope, why.status, seconds, rid)


def refusing(protocol: type, state: Any) -> type:
    """``protocol`` (uvicorn's httptools protocol class) refusing, from the headers,
    what :meth:`Refusals.refused` names, for the app whose ``app.state`` is ``state``."""
    if not hasattr(protocol, "_start_asgi_task"):
        return protocol
    refusals = Refusals(state)

    class EarlyRefusal(protocol):  # type: ignore[misc,valid-type]
        refused = False  # this connection's request was refused: nothing more is served

        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            if self.refused or self.transport.is_closing():  # pipelined after a refusal
                cycle.response_complete = True
                return
            scope = cycle.scope
            refusal = refusals.refused(scope)
            if refusal is None:
                super()._start_asgi_task(cycle, app)
                return
            started = time.perf_counter()
            # the body that follows is dropped as it is parsed (uvicorn keeps none
            # once the response is complete), and closing stops the reading
            cycle.response_complete = True
            cycle.keep_alive = False
            self.refused = True
            transport = self.transport
            server = self.server_state  # its date header, as of the answer

            def send() -> None:
                rid = request_id(scope["headers"])
                transport.write(answer(refusal[1], rid, server.default_headers, started))
                transport.close()
                refusals.count(scope, *refusal, started, rid)

            refusals.answer(send, transport)

    EarlyRefusal.__name__ = f"EarlyRefusal{protocol.__name__}"
    return EarlyRefusal
