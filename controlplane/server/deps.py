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
unknown namespace → 404.
"""

from __future__ import annotations

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


def require_caller(request: Request, session: Session = Depends(get_session)) -> Caller:
    token = _bearer(request)
    row = session.scalar(select(Token).where(Token.token_hash == hash_token(token)))
    if row is None or row.revoked_at is not None:
        raise ApiError(401, "unauthorized", "unknown or revoked token")
    return Caller(token_id=row.id, admin=row.admin, namespace_id=row.namespace_id)


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
