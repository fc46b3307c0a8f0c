"""Request dependencies: a database session, and who is asking for which namespace.

Use in a route::

    from dreamlake.controlplane.server.deps import Access, require_namespace, get_session

    @router.get("/api/namespaces/{ns}/things")
    def list_things(access: Access = Depends(require_namespace),
                    session: Session = Depends(get_session)) -> ...:
        access.namespace        # the Namespace row named by {ns}
        access.namespace_ids    # ids it may see (itself, plus org siblings)

Order of checks: missing/unknown/revoked/expired token → 401; a namespace-scoped
token naming a namespace outside its own (or its org) → 403; an admin token naming
an unknown namespace → 404.

Known-good tokens and namespace access are cached for up to a minute (less when the
token expires sooner); a revocation or an org change empties the cache on every
replica at once (``forget:tokens``), and concurrent misses share one lookup.

No request holds a database connection while it waits for a thread: the auth
dependencies are async, answer from :class:`TokenCache` when they can (known-good
tokens and their namespace access, a few seconds), and otherwise look up in a
session of their own that is closed before they return; ``get_session`` hands out
a session that takes a connection only when the route first uses it, in the
route's own thread, and is closed on the event loop. A revocation empties the
caches of every replica (``forget:tokens``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.routing import APIRoute
from sqlalchemy import select
from sqlalchemy.orm import Session

from ..db import utcnow
from ..models import Namespace, Token
from .access.tokens import hash_token
from .errors import ApiError


async def get_session(request: Request) -> AsyncIterator[Session]:
    session: Session = request.app.state.sessionmaker()
    try:
        yield session
    finally:
        session.close()


@dataclass(frozen=True)
class Caller:
    token_id: int
    admin: bool
    namespace_id: int | None
    scope: str = "namespace"  # "admin", "namespace", "daemon", ... (see scopes.py)
    provider: str | None = None  # a daemon token's provider
    instance: str | None = None  # a daemon token's pinned instance ("" = pins on register)
    expires_at: datetime | None = None

    def expired(self) -> bool:
        """Exactly when the token's expiry has passed (whatever a cache holds)."""
        return self.expires_at is not None and utcnow() >= self.expires_at

    def ttl(self) -> float | None:
        """How long a cache may keep what it knows of this caller."""
        if self.expires_at is None:
            return None
        return (self.expires_at - utcnow()).total_seconds()


@dataclass(frozen=True)
class Access:
    caller: Caller
    namespace: Namespace
    namespace_ids: tuple[int, ...]
    own: bool = True  # the token's own namespace (else an org sibling's: reads only)


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise ApiError(401, "unauthorized", "missing bearer token (Authorization: Bearer <token>)")
    return value.strip()


class TokenCache:
    """Known-good tokens (and namespace access) for up to ``ttl`` seconds, so a
    heartbeat costs no lookup. Unknown tokens are never cached; revocations clear it."""

    def __init__(self, ttl: float = 60.0, size: int = 50000) -> None:
        self.ttl = ttl
        self.size = size
        self._items: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            hit = self._items.get(key)
        if hit is None or hit[0] < time.monotonic():
            return None
        return hit[1]

    def put(self, key: Any, value: Any, ttl: float | None = None) -> None:
        with self._lock:
            if len(self._items) >= self.size:
                self._items.clear()
            self._items[key] = (time.monotonic() + min(self.ttl, ttl or self.ttl), value)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def _cache(request: Request) -> TokenCache | None:
    return getattr(request.app.state, "token_cache", None)


async def _single_flight(request: Request, key: Any, fn: Any) -> Any:
    return await _single_flight_on(request.app.state, key, fn)


async def _single_flight_on(state: Any, key: Any, fn: Any) -> Any:
    """Run ``fn`` in a thread once for every concurrent request that needs ``key``
    (when a cache entry lapses under load, one lookup, not one per request)."""
    flights: dict[Any, asyncio.Future[Any]] | None = getattr(state, "flights", None)
    if flights is None:
        flights = state.flights = {}
    pending = flights.get(key)
    if pending is not None:
        return await asyncio.shield(pending)
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    flights[key] = future
    try:
        result = await run_in_threadpool(fn)
    except BaseException as exc:
        future.set_exception(exc)
        future.exception()  # retrieved: no "never retrieved" warning when nobody waits
        raise
    else:
        future.set_result(result)
        return result
    finally:
        flights.pop(key, None)


def _expired() -> ApiError:
    return ApiError(401, "unauthorized", "this token has expired; mint a new one")


async def require_caller(request: Request) -> Caller:
    known = getattr(request.state, "caller", None)
    if isinstance(known, Caller):
        return known  # the gate authenticated this request (see gate.py)
    cache = _cache(request)
    digest = hash_token(_bearer(request))
    if cache is not None and (hit := cache.get(digest)) is not None:
        if hit.expired():
            raise _expired()
        return hit  # type: ignore[no-any-return]

    def lookup() -> Caller:
        with request.app.state.sessionmaker() as session:
            return caller_of(request, session)

    return await _single_flight(request, digest, lookup)  # type: ignore[no-any-return]


def caller_of(request: Request, session: Session) -> Caller:
    """Who sent ``request`` (plain function form of :func:`require_caller`)."""
    return caller_of_digest(request.app.state, hash_token(_bearer(request)), session)


def caller_of_digest(state: Any, digest: str, session: Session) -> Caller:
    """The caller holding the token whose SHA-256 is ``digest`` (401 when unknown,
    revoked or expired), remembered in the token cache no longer than it is valid."""
    cache: TokenCache | None = getattr(state, "token_cache", None)
    if cache is not None and (hit := cache.get(digest)) is not None:
        if hit.expired():
            raise _expired()
        return hit  # type: ignore[no-any-return]
    row = session.scalar(select(Token).where(Token.token_hash == digest))
    if row is None or row.revoked_at is not None:
        refused_of(state).add(digest, _unknown())
        raise _unknown()
    scope = "admin" if row.admin else (row.scope or "namespace")
    caller = Caller(
        token_id=row.id,
        admin=row.admin,
        namespace_id=row.namespace_id,
        scope=scope,
        provider=row.provider_name if scope in ("daemon", "bootstrap") else None,
        instance=row.instance_id if scope in ("daemon", "bootstrap") else None,
        expires_at=row.expires_at,
    )
    if caller.expired():
        refused_of(state).add(digest, _expired())
        raise _expired()
    if cache is not None:
        cache.put(digest, caller, caller.ttl())
    return caller


def _unknown() -> ApiError:
    return ApiError(401, "unauthorized", "unknown or revoked token")


class RefusedTokens:
    """Digests of tokens found unknown, revoked or expired: refused from memory from
    then on, without a look-up (none of these ever becomes valid: a token is random,
    so an unknown digest is never minted later, and nothing un-revokes). Bounded: a
    flood of made-up tokens empties it, and then costs one look-up each again."""

    def __init__(self, size: int = 20000) -> None:
        self.size = size
        self._digests: dict[str, ApiError] = {}
        self._lock = threading.Lock()

    def add(self, digest: str, why: ApiError) -> None:
        with self._lock:
            if len(self._digests) >= self.size:
                self._digests.clear()
            self._digests[digest] = why

    def check(self, digest: str) -> None:
        """Raise the 401 ``digest`` was refused with, if it was."""
        why = self._digests.get(digest)
        if why is not None:
            raise ApiError(why.status, why.error, why.detail)


def refused_of(state: Any) -> RefusedTokens:
    refused: RefusedTokens | None = getattr(state, "refused_tokens", None)
    if refused is None:
        refused = state.refused_tokens = RefusedTokens()
    return refused


async def caller_cached(state: Any, digest: str) -> Caller:
    """:func:`caller_of_digest` from the cache, else in a thread (single flight)."""
    refused_of(state).check(digest)
    cache: TokenCache | None = getattr(state, "token_cache", None)
    if cache is not None and (hit := cache.get(digest)) is not None:
        if hit.expired():
            raise _expired()
        return hit  # type: ignore[no-any-return]

    def lookup() -> Caller:
        with state.sessionmaker() as session:
            return caller_of_digest(state, digest, session)

    return await _single_flight_on(state, digest, lookup)  # type: ignore[no-any-return]


async def require_admin(caller: Caller = Depends(require_caller)) -> Caller:
    # the gate refuses a route declared "admin" first; this holds for any other
    if not caller.admin:
        raise ApiError(403, "forbidden", "this needs an admin token")
    return caller


def org_namespace_ids(session: Session, ns: Namespace) -> tuple[int, ...]:
    if ns.org_id is None:
        return (ns.id,)
    ids = session.scalars(select(Namespace.id).where(Namespace.org_id == ns.org_id)).all()
    return tuple(sorted(set(ids) | {ns.id}))


async def require_namespace(ns: str, request: Request) -> Access:
    """Who may do what in ``{ns}``: from the cache, else looked up in a session of
    its own (closed before the route runs)."""
    known = getattr(request.state, "access", None)
    if isinstance(known, Access) and known.namespace.name == ns:
        return known  # the gate checked this request's scope (see gate.py)
    return await access_cached(request.app.state, hash_token(_bearer(request)), ns)


def cached_access(state: Any, digest: str, ns: str) -> Access | None:
    """The remembered access of a token to ``ns``, while the token is valid."""
    cache: TokenCache | None = getattr(state, "token_cache", None)
    hit = cache.get((digest, ns)) if cache is not None else None
    if hit is None or hit.caller.expired():
        return None
    return hit  # type: ignore[no-any-return]


async def access_cached(state: Any, digest: str, ns: str) -> Access:
    """:func:`access_to` for the token ``digest``: from the cache, else looked up
    in a session of its own (closed before returning), one lookup for every
    concurrent request that needs it."""
    if (hit := cached_access(state, digest, ns)) is not None:
        return hit
    refused_of(state).check(digest)
    cache: TokenCache | None = getattr(state, "token_cache", None)

    def lookup() -> Access:
        with state.sessionmaker() as session:
            access = access_to(ns, caller_of_digest(state, digest, session), session)
        if cache is not None:
            cache.put((digest, ns), access, access.caller.ttl())
        return access

    return await _single_flight_on(state, (digest, ns), lookup)  # type: ignore[no-any-return]


require_namespace_released = require_namespace


def access_to(ns: str, caller: Caller, session: Session) -> Access:
    """What ``caller`` may do in namespace ``ns`` (plain form of :func:`require_namespace`)."""
    row = session.scalar(select(Namespace).where(Namespace.name == ns))
    if caller.admin:
        if row is None:
            raise ApiError(404, "not_found", f"no namespace named {ns!r}")
        return Access(caller, row, org_namespace_ids(session, row))
    if row is None:
        raise ApiError(403, "forbidden", f"this token is not valid for namespace {ns!r}")
    if row.id != caller.namespace_id:
        own = session.get(Namespace, caller.namespace_id) if caller.namespace_id else None
        if (
            caller.scope == "daemon"
            or own is None
            or own.org_id is None
            or own.org_id != row.org_id
        ):
            raise ApiError(403, "forbidden", f"this token is not valid for namespace {ns!r}")
        return Access(caller, row, org_namespace_ids(session, row), own=False)
    return Access(caller, row, org_namespace_ids(session, row))


def closing_session(fn: Any) -> Any:
    """``fn`` (a sync route) closing its ``session`` in its own thread as it returns,
    so its connection goes back to the pool at once, not whenever the dependency's
    teardown gets to it (under load, later than the next request needs it)."""
    import functools
    import inspect

    if inspect.iscoroutinefunction(fn):
        return fn

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            session = kwargs.get("session")
            if isinstance(session, Session):
                session.close()

    return run


class SessionRoute(APIRoute):
    """The route class of every router: sync endpoints close their session on return."""

    def __init__(self, path: str, endpoint: Any, **kwargs: Any) -> None:
        super().__init__(path, closing_session(endpoint), **kwargs)
