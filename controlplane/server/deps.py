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

Known-good tokens and namespace access are cached for up to a minute (each entry a
random 45 to 60 s, so a fleet that authenticated at once does not miss at once; less
when the token expires sooner); a revocation or an org change empties the cache on
every replica at once (``forget:tokens``), and concurrent misses share one lookup,
one query (:func:`access_of_digest`).

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
import itertools
import random
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.routing import APIRoute
from sqlalchemy import Connection, Engine, bindparam, select
from sqlalchemy.orm import Session, make_transient_to_detached

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
    heartbeat costs no lookup. Unknown tokens are never cached; revocations clear it.

    Each entry lives a random part of the life, between ``spread`` and all of
    ``ttl`` (never past what it is given, the token's own validity): a fleet that
    authenticated at once (a ramp, a restart) does not miss at once a minute later.
    No entry outlives ``ttl``, whatever else: a renewal counts on it
    (``identity/routes.py``). Full, it drops its expired entries, then its oldest,
    never everything at once."""

    def __init__(self, ttl: float = 60.0, size: int = 50000, spread: float = 0.75) -> None:
        self.ttl = ttl
        self.size = size
        self.spread = spread  # the shortest life, as a part of ``ttl``
        self._items: dict[Any, tuple[float, Any]] = {}  # oldest first
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            hit = self._items.get(key)
        if hit is None or hit[0] < time.monotonic():
            return None
        return hit[1]

    def life(self, ttl: float | None = None) -> float:
        """How long a new entry lives: a random part of ``ttl`` (from ``spread`` of
        it to all of it), never more than ``ttl`` (the caller's own validity)."""
        life = self.ttl * random.uniform(min(self.spread, 1.0), 1.0)
        return life if ttl is None else min(life, ttl)

    def put(self, key: Any, value: Any, ttl: float | None = None) -> None:
        now = time.monotonic()
        ends = now + self.life(ttl)
        with self._lock:
            self._items.pop(key, None)  # put again: the newest
            if len(self._items) >= self.size:
                self._evict(now)
            self._items[key] = (ends, value)

    def _evict(self, now: float) -> None:
        """Make room (under the lock): the expired entries go, then the oldest, down
        to nine tenths of ``size`` (one sweep for a tenth of the puts to come, not
        one each)."""
        keep = max(0, self.size - max(1, self.size // 10))
        items = self._items
        expired = [key for key, (ends, _) in items.items() if ends < now]
        for key in expired:
            del items[key]
        if len(items) > keep:
            for key in list(itertools.islice(iter(items), len(items) - keep)):
                del items[key]

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


def caller_of_digest(state: Any, digest: str, session: Session | Connection) -> Caller:
    """The caller holding the token whose SHA-256 is ``digest`` (401 when unknown,
    revoked or expired), remembered in the token cache no longer than it is valid."""
    cache: TokenCache | None = getattr(state, "token_cache", None)
    if cache is not None and (hit := cache.get(digest)) is not None:
        if hit.expired():
            raise _expired()
        return hit  # type: ignore[no-any-return]
    row = _connection(session).execute(_CALLER, {"digest": digest}).first()
    return _known(state, digest, row)


def _known(state: Any, digest: str, row: Any) -> Caller:
    """The caller of the token ``row`` (of ``digest``; None: no such token), or the
    401 it gets, remembered either way."""
    if row is None or row.revoked_at is not None:
        refused_of(state).add(digest, _unknown(), known=row is not None)
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
        refused_of(state).add(digest, _expired(), known=True)
        raise _expired()
    cache: TokenCache | None = getattr(state, "token_cache", None)
    if cache is not None:
        cache.put(digest, caller, caller.ttl())
    return caller


def _unknown() -> ApiError:
    return ApiError(401, "unauthorized", "unknown or revoked token")


class RefusedTokens:
    """Digests of tokens found unknown, revoked or expired: refused from memory from
    then on, without a look-up (none of these ever becomes valid: a token is random,
    so an unknown digest is never minted later, and nothing un-revokes).

    Bounded, ``size`` digests of each kind: those with no row (unknown) and those
    whose row refuses them (revoked, expired) apart, each dropping its oldest when
    full (one at a time, O(1)). A flood of made-up tokens then forgets only the
    oldest made-up ones, never the real revoked tokens learned before it."""

    def __init__(self, size: int = 20000) -> None:
        self.size = size
        self._unknown: OrderedDict[str, ApiError] = OrderedDict()  # oldest first
        self._known: OrderedDict[str, ApiError] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, digest: str, why: ApiError, *, known: bool = False) -> None:
        """Remember ``digest``'s refusal (``known``: its row exists, revoked or
        expired), dropping the oldest of its kind when full."""
        digests = self._known if known else self._unknown
        with self._lock:
            digests[digest] = why
            digests.move_to_end(digest)
            while len(digests) > max(0, self.size):
                digests.popitem(last=False)

    def check(self, digest: str) -> None:
        """Raise the 401 ``digest`` was refused with, if it was."""
        why = self._known.get(digest) or self._unknown.get(digest)
        if why is not None:
            raise ApiError(why.status, why.error, why.detail)

    def held(self) -> int:
        """How many digests it remembers (of both kinds)."""
        return len(self._known) + len(self._unknown)


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
        with _reading(state) as session:
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
        with _reading(state) as session:
            access = access_of_digest(state, digest, ns, session)
        if cache is not None:
            cache.put((digest, ns), access, access.caller.ttl())
        return access

    return await _single_flight_on(state, (digest, ns), lookup)  # type: ignore[no-any-return]


require_namespace_released = require_namespace


def access_of_digest(state: Any, digest: str, ns: str, session: Session | Connection) -> Access:
    """``access_to(ns, caller_of_digest(state, digest, session), session)`` in one
    query when the caller is not cached: the same answers and refusals, in the same
    order (what a miss of the token cache costs)."""
    cache: TokenCache | None = getattr(state, "token_cache", None)
    if cache is not None and (hit := cache.get(digest)) is not None:
        if hit.expired():
            raise _expired()
        return access_to(ns, hit, session)
    rows = _connection(session).execute(_CALLER_ACCESS, {"digest": digest, "ns": ns}).all()
    caller = _known(state, digest, rows[0] if rows else None)
    return _access_of(ns, caller, rows)


def access_to(ns: str, caller: Caller, session: Session | Connection) -> Access:
    """What ``caller`` may do in namespace ``ns`` (plain form of :func:`require_namespace`)."""
    own = caller.namespace_id or None
    rows = _connection(session).execute(_ACCESS, {"ns": ns, "own": own}).all()
    return _access_of(ns, caller, rows)


def _access_of(ns: str, caller: Caller, rows: Any) -> Access:
    """What ``caller`` may do in ``ns``, from the rows of :data:`_ACCESS` (or of
    :data:`_CALLER_ACCESS`): one per namespace of ``ns``'s org (one when it has
    none, its columns empty when there is no ``ns``)."""
    first = rows[0] if rows else None
    if first is None or first.n_id is None:
        if caller.admin:
            raise ApiError(404, "not_found", f"no namespace named {ns!r}")
        raise ApiError(403, "forbidden", f"this token is not valid for namespace {ns!r}")
    if first.n_org is None:
        ids: tuple[int, ...] = (first.n_id,)
    else:
        ids = tuple(sorted({r.sib_id for r in rows if r.sib_id is not None} | {first.n_id}))
    row = Namespace(id=first.n_id, name=first.n_name, org_id=first.n_org, created_at=first.n_at)
    make_transient_to_detached(row)  # as if loaded by a session now closed
    if caller.admin or first.n_id == caller.namespace_id:
        return Access(caller, row, ids)
    if (
        caller.scope == "daemon"
        or not caller.namespace_id
        or first.own_id is None
        or first.own_org is None
        or first.own_org != first.n_org
    ):
        raise ApiError(403, "forbidden", f"this token is not valid for namespace {ns!r}")
    return Access(caller, row, ids, own=False)


def _reading(state: Any) -> Any:
    """Where a miss looks up: a connection of the app's engine, closed when done
    (a session's transaction bookkeeping costs more than the one query it runs:
    0.14 ms against 0.05 on SQLite), else a session of ``state.sessionmaker``.

    On a server database the connection autocommits: the miss's one SELECT is
    its own transaction, one round trip, without the driver's BEGIN before it and
    the pool's ROLLBACK after it (besides the pool's liveness check when it lends
    the connection, ``pool_pre_ping``, as for every checkout). SQLite's driver
    begins no transaction for a SELECT, and setting its isolation level costs
    PRAGMAs: its connection is left as it is."""
    engine = getattr(state, "engine", None)
    if not isinstance(engine, Engine):
        return state.sessionmaker()
    connection = engine.connect()
    if engine.dialect.name != "sqlite":
        try:
            connection.execution_options(isolation_level="AUTOCOMMIT")
        except BaseException:
            connection.close()
            raise
    return connection


def _connection(session: Session | Connection) -> Connection:
    return session.connection() if isinstance(session, Session) else session


def _statements() -> tuple[Any, Any, Any]:
    """The miss path's queries, made once: a token by its digest; a namespace by
    name with its org's ids and the caller's own namespace's org; both at once."""
    tokens, namespaces = Token.__table__, Namespace.__table__
    n, own, sib = namespaces.alias("n"), namespaces.alias("own"), namespaces.alias("sib")
    token = (
        tokens.c.id,
        tokens.c.admin,
        tokens.c.namespace_id,
        tokens.c.scope,
        tokens.c.provider_name,
        tokens.c.instance_id,
        tokens.c.expires_at,
        tokens.c.revoked_at,
    )
    ns = (
        n.c.id.label("n_id"),
        n.c.name.label("n_name"),
        n.c.org_id.label("n_org"),
        n.c.created_at.label("n_at"),
        own.c.id.label("own_id"),
        own.c.org_id.label("own_org"),
        sib.c.id.label("sib_id"),
    )
    by_digest = tokens.c.token_hash == bindparam("digest")
    caller = select(*token).where(by_digest)
    access = (
        select(*ns)
        .select_from(
            n.outerjoin(own, own.c.id == bindparam("own")).outerjoin(
                sib, sib.c.org_id == n.c.org_id
            )
        )
        .where(n.c.name == bindparam("ns"))
    )
    both = (
        select(*token, *ns)
        .select_from(
            tokens.outerjoin(n, n.c.name == bindparam("ns"))
            .outerjoin(own, own.c.id == tokens.c.namespace_id)
            .outerjoin(sib, sib.c.org_id == n.c.org_id)
        )
        .where(by_digest)
    )
    return caller, access, both


_CALLER, _ACCESS, _CALLER_ACCESS = _statements()


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
