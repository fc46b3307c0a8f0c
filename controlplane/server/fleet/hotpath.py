"""The fleet's two hottest requests answered before FastAPI's routing, when the
server already knows everything they need; every other request, and every case
these do not cover, goes on to the routes unchanged.

10,000 daemons send about 1,000 heartbeats and renew about 500 long-polls a second.
For a worker this server knows, under a token whose namespace access is cached,
neither needs a thread, a database connection or a pydantic request model, yet
FastAPI's route matching, dependency solving and middleware layers cost several
times what the answer itself does. :class:`HotPath` (pure ASGI, mounted as the
outermost middleware) answers:

* ``POST /api/namespaces/{ns}/workers/{id}/heartbeat`` with no body, or the empty
  JSON object ``{}`` the daemon's client sends (the route reads no body): the beat
  is recorded in memory (:class:`Heartbeats`) and the same ``HeartbeatOut``
  document the route builds is sent;
* ``GET /api/namespaces/{ns}/workers/{id}/work?wait=S`` while the worker's provider
  is known to have nothing queued (:class:`QueueHints`): the poll counts as a beat,
  keeps beating while it is held (``Heartbeats.hold``) and sleeps on the provider's
  wake-up; when nothing comes it answers 204 when the
  route would (``poll_deadline``). A wake-up, or anything queued, hands the poll
  to the route with the wait that is left, which looks in the database and claims.

A worker this server has not seen makes it read the fleet again first
(``warmup.Relearn``: one read for all that miss together, as when a replica dies
and its daemons move here). A cache miss, a worker still unknown, any other body, an
unexpected query parameter or a path that does not match exactly falls through to
the route, which answers (and fills the caches for the next time). Every response
also carries ``Server-Timing: app;dur=<ms>``: the time the server spent on the
request (for a long-poll, its wait included), which is what the fleet benchmark
reports as server time.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any
from urllib.parse import parse_qsl

from ..access.scopes import refusal
from ..access.tokens import hash_token
from ..deps import cached_access
from ..identity.peer import peer_digest
from ..limits import body_length
from ..routes.workers import POLL_RECHECK_SECONDS, poll_deadline
from ..schemas import HeartbeatOut
from ..settings import MAX_WAIT_SECONDS
from .shedding import restarting, send_503

Scope = dict[str, Any]
Message = dict[str, Any]

_PATH = re.compile(
    r"/api/namespaces/([a-z0-9][a-z0-9-]{0,62})/workers/"
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/(heartbeat|work)"
)
_JSON_HEADERS = [(b"content-type", b"application/json")]
_EMPTY_OBJECT = b"{}"


class _Receive:
    """``receive`` that can hand back a message already read and survives being
    cancelled mid-wait (a pending read is kept for the next call), so the poll can
    watch for a disconnect and still pass the request on to the route."""

    def __init__(self, receive: Any) -> None:
        self._receive = receive
        self._buffered: list[Message] = []
        self._pending: asyncio.Future[Message] | None = None

    async def first(self) -> Message:
        message: Message = await self._receive()
        self._buffered.append(message)
        return message

    def watch(self) -> asyncio.Future[Message]:
        """The next message, read in the background (a disconnect, for a GET)."""
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._receive())
        return self._pending

    async def __call__(self) -> Message:
        if self._buffered:
            return self._buffered.pop(0)
        pending = self.watch()
        message = await asyncio.shield(pending)
        self._pending = None
        return message

    def close(self) -> None:
        if self._pending is not None and not self._pending.done():
            self._pending.cancel()


def _timed(send: Any, started: float) -> Any:
    async def timed_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            dur = (time.perf_counter() - started) * 1000
            headers = list(message.get("headers", []))
            headers.append((b"server-timing", f"app;dur={dur:.2f}".encode()))
            message = {**message, "headers": headers}
        await send(message)

    return timed_send


class HotPath:
    """Pure ASGI middleware; see the module's docstring."""

    def __init__(self, app: Any, state: Any) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _timed(send, time.perf_counter())
        match = _PATH.fullmatch(scope["path"])
        if match is not None:
            ns, worker_id, what = match.groups()
            if what == "heartbeat" and scope["method"] == "POST":
                receive = await self._heartbeat(scope, receive, ns, worker_id, send)
                if receive is None:
                    return
            elif what == "work" and scope["method"] == "GET":
                await self._poll(scope, receive, send, ns, worker_id)
                return
        await self.app(scope, receive, send)

    # -- what both need ---------------------------------------------------------

    def _access(self, scope: Scope, ns: str) -> Any:
        """The cached access of this request's token to ``ns`` when it may use the
        worker routes there (what :class:`~..access.gate.Gate` checks), or None: an
        org sibling's token only reads, so the route refuses it."""
        cache = getattr(self.state, "token_cache", None)
        if cache is None:
            return None
        given = [value for key, value in scope["headers"] if key == b"authorization"]
        peer = None if given else peer_digest(scope)  # a daemon's client certificate
        if peer is not None:
            digest = peer
        else:
            if len(given) != 1:  # none, or several: the gate decides (it reads the first)
                return None
            scheme, _, token = given[0].decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                return None
            digest = hash_token(token.strip())
        access = cached_access(self.state, digest, ns)
        if access is None:
            return None
        own = access.own
        if refusal("worker", scope=access.caller.scope, own=own, sibling=not own) is not None:
            return None
        return access

    def _owns(self, access: Any, hb: Any, worker_id: str) -> bool:
        """Whether the caller may act for this worker here; a daemon's token only
        for its own provider's worker (and its own instance's, when pinned), as the
        routes last saw it (else the route answers, and refuses)."""
        del hb
        caller = access.caller
        if caller.scope != "daemon":
            return True
        owners = getattr(self.state, "worker_owners", None) or {}
        known = owners.get(worker_id)
        if known is None or not caller.provider or known[0] != caller.provider:
            return False
        return not caller.instance or known[1] == caller.instance

    async def _knows(self, hb: Any, worker_id: str) -> bool:
        """Whether this server knows ``worker_id``, reading the fleet again first
        when it does not (``warmup.Relearn``: one read for every miss at once)."""
        if hb.provider_of(worker_id) is not None:
            return True
        relearn = getattr(self.state, "relearn", None)
        if relearn is None:
            return False
        await relearn()
        return hb.provider_of(worker_id) is not None

    def _services(self) -> tuple[Any, Any] | None:
        hb = getattr(self.state, "heartbeats", None)
        hints = getattr(self.state, "queue_hints", None)
        if hb is None or hints is None or not hb.running:
            return None  # the lifespan has not run yet: let the routes set things up
        return hb, hints

    @staticmethod
    async def _json(send: Any, status: int, body: bytes) -> None:
        headers = [(b"content-length", str(len(body)).encode()), *_JSON_HEADERS]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    # -- POST .../heartbeat -----------------------------------------------------

    async def _heartbeat(
        self, scope: Scope, receive: Any, ns: str, worker_id: str, send: Any
    ) -> Any:
        """None when answered here; else the ``receive`` the route reads from."""
        length = body_length(scope)
        services = self._services()
        if services is None or length not in (0, len(_EMPTY_OBJECT)):
            return receive  # another body: the route's limits and guards read it
        access = self._access(scope, ns)
        if access is None or scope.get("query_string"):
            return receive
        hb, _hints = services
        if not await self._knows(hb, worker_id) or not self._owns(access, hb, worker_id):
            return receive
        if length:
            receive = _Receive(receive)  # what is read here, the route reads again
            message = await receive.first()
            if message.get("body") != _EMPTY_OBJECT or message.get("more_body"):
                return receive
        seen = hb.beat_known(access.namespace.id, worker_id)
        if seen is None:
            return receive
        settings = self.state.settings
        out = HeartbeatOut(
            worker_id=worker_id,
            last_seen=seen,
            heartbeat_seconds=settings.heartbeat_seconds,
            live_seconds=settings.live_seconds,
        )
        await self._json(send, 200, out.model_dump_json(by_alias=True).encode())
        return None

    # -- GET .../work?wait=S ----------------------------------------------------

    @staticmethod
    def _wait_of(scope: Scope) -> float | None:
        """``wait`` when it is the only parameter and the route would accept it."""
        pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        if len(pairs) != 1 or pairs[0][0] != "wait":
            return None
        try:
            wait = float(pairs[0][1])
        except ValueError:
            return None
        return wait if 0 < wait <= MAX_WAIT_SECONDS else None

    async def _poll(self, scope: Scope, receive: Any, send: Any, ns: str, worker_id: str) -> None:
        services = self._services()
        bodiless = body_length(scope) == 0  # a body: the route's limits and guards read it
        access = self._access(scope, ns) if services is not None and bodiless else None
        wait = self._wait_of(scope) if access is not None else None
        if (
            services is None
            or access is None
            or wait is None
            or not await self._knows(services[0], worker_id)
            or not self._owns(access, services[0], worker_id)
        ):
            await self.app(scope, receive, send)
            return
        hb, hints = services
        provider = hb.provider_of(worker_id)  # forgotten since _knows: the route answers
        key = f"work:{access.namespace.id}:{provider}"
        if provider is None or not hints.known_empty(key):
            await self.app(scope, receive, send)
            return
        if hb.beat_known(access.namespace.id, worker_id, polled=True) is None:
            await self.app(scope, receive, send)
            return
        deadline = poll_deadline(wait)
        notifier = self.state.notifier
        replay = _Receive(receive)
        hb.hold(worker_id)  # while held, the poll is the worker's heartbeat
        released = False
        try:
            if (await replay.first())["type"] == "http.disconnect":
                return
            gone = replay.watch()
            draining = getattr(self.state, "draining", None)
            while hints.known_empty(key):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    await send({"type": "http.response.start", "status": 204, "headers": []})
                    await send({"type": "http.response.body", "body": b""})
                    return
                if draining is not None and draining.is_set():
                    if (metrics := getattr(self.state, "metrics", None)) is not None:
                        metrics.shed("draining")
                    await send_503(send, restarting(self.state.settings.retry_after_seconds))
                    return
                woke = await notifier.wait(
                    notifier.event(key),
                    min(remaining, POLL_RECHECK_SECONDS),
                    until=draining,
                    gone=gone,
                )
                if draining is not None and draining.is_set():
                    continue  # answered at the top of the loop
                if woke:
                    break  # a wake-up: the route looks
                if gone.done():
                    if gone.result()["type"] == "http.disconnect":
                        return  # the daemon went away: nothing to answer, nothing to claim
                    break  # not a GET's stream: let the route see it
            # something was queued (or a wake-up arrived): the route looks and claims
            left = max(0.0, deadline - time.monotonic())
            scope = {**scope, "query_string": f"wait={left:.3f}".encode()}
            hb.release(worker_id)  # the route holds it from here
            released = True
            await self.app(scope, replay, send)
        finally:
            if not released:
                hb.release(worker_id)
            replay.close()
