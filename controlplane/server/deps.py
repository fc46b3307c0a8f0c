"""Request dependencies: a database session, and who is asking for which namespace.

Use in a route::

    from dreamlake.controlplane.server.deps import Access, require_namespace, get_session

    @router.get("/api/namespaces/{ns}/things")
    def list_things(access: Access = Depends(require_namespace),
                    session: Session = Depends(get_session)) -> ...:
        access.namespace        # the Namespace row named by {ns}
        access.namespace_ids    # ids it may see (itself, plus org siblings)

Order of checks: missing/unknown/revoked token → 401; a namespace-scoped token
naming a namespace outside its own (or its org) → 403; an admin token naming an
unknown namespace → 404. Known-good tokens are cached for a few seconds
(:class:`TokenCache`), so a revocation takes that long to bite.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from fastapi import Depends, Request
from sqlalchemy import select
from sqlalchemy.orm import Session

from ..models import Namespace, Token
from .errors import ApiError
from .tokens import hash_token


def get_session(request: Request) -> Iterator[Session]:
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


@dataclass(frozen=True)
class Access:
    caller: Caller
    namespace: Namespace
    namespace_ids: tuple[int, ...]


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise ApiError(401, "unauthorized", "missing bearer token (Authorization: Bearer <token>)")
    return value.strip()


class TokenCache:
    """Known-good tokens for a few seconds, so a heartbeat costs one write, not a
    lookup too. Unknown tokens are never cached."""

    def __init__(self, ttl: float = 5.0, size: int = 10000) -> None:
        self.ttl = ttl
        self.size = size
        self._items: dict[str, tuple[float, Caller]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Caller | None:
        with self._lock:
            hit = self._items.get(key)
        if hit is None or hit[0] < time.monotonic():
            return None
        return hit[1]

    def put(self, key: str, caller: Caller) -> None:
        with self._lock:
            if len(self._items) >= self.size:
                self._items.clear()
            self._items[key] = (time.monotonic() + self.ttl, caller)


def require_caller(request: Request, session: Session = Depends(get_session)) -> Caller:
    return caller_of(request, session)


def caller_of(request: Request, session: Session) -> Caller:
    """Who sent ``request`` (plain function form of :func:`require_caller`)."""
    digest = hash_token(_bearer(request))
    cache: TokenCache | None = getattr(request.app.state, "token_cache", None)
    if cache is not None and (hit := cache.get(digest)) is not None:
        return hit
    row = session.scalar(select(Token).where(Token.token_hash == digest))
    if row is None or row.revoked_at is not None:
        raise ApiError(401, "unauthorized", "unknown or revoked token")
    caller = Caller(token_id=row.id, admin=row.admin, namespace_id=row.namespace_id)
    if cache is not None:
        cache.put(digest, caller)
    return caller


def require_admin(caller: Caller = Depends(require_caller)) -> Caller:
    if not caller.admin:
        raise ApiError(403, "forbidden", "this needs an admin token")
    return caller


def org_namespace_ids(session: Session, ns: Namespace) -> tuple[int, ...]:
    if ns.org_id is None:
        return (ns.id,)
    ids = session.scalars(select(Namespace.id).where(Namespace.org_id == ns.org_id)).all()
    return tuple(sorted(set(ids) | {ns.id}))


def require_namespace(
    ns: str, caller: Caller = Depends(require_caller), session: Session = Depends(get_session)
) -> Access:
    return access_to(ns, caller, session)


def require_namespace_released(ns: str, request: Request) -> Access:
    """:func:`require_namespace` in a session of its own, closed before the route
    runs: for long-polls, which must not hold a pooled connection while they wait."""
    with request.app.state.sessionmaker() as session:
        return access_to(ns, caller_of(request, session), session)


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
        if own is None or own.org_id is None or own.org_id != row.org_id:
            raise ApiError(403, "forbidden", f"this token is not valid for namespace {ns!r}")
    return Access(caller, row, org_namespace_ids(session, row))
