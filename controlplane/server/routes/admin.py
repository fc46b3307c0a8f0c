"""Health, namespaces and tokens."""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Depends, Request
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ...db import utcnow
from ...models import Namespace, Token
from ..deps import (
    Access,
    Caller,
    SessionRoute,
    get_session,
    require_admin,
    require_caller,
    require_namespace,
)
from ..errors import ApiError
from ..schemas import NamespaceIn, NamespaceOut, NamespacePatch, TokenIn, TokenOut, WhoAmI
from ..tokens import hash_token, new_token

router = APIRouter(route_class=SessionRoute)


@router.get("/healthz")
def healthz(request: Request, session: Session = Depends(get_session)) -> dict[str, object]:
    from sqlalchemy import text

    from dreamlake import __version__

    try:
        session.execute(text("SELECT 1"))
    except Exception as exc:
        raise ApiError(503, "unavailable", f"database unreachable: {exc}") from exc
    engine = request.app.state.engine
    return {"status": "ok", "version": __version__, "database": engine.dialect.name}


@router.get("/api/whoami", response_model=WhoAmI)
def whoami(
    caller: Caller = Depends(require_caller), session: Session = Depends(get_session)
) -> WhoAmI:
    ns = session.get(Namespace, caller.namespace_id) if caller.namespace_id else None
    return WhoAmI(admin=caller.admin, namespace=ns.name if ns else None)


def _ns_out(row: Namespace) -> NamespaceOut:
    return NamespaceOut(name=row.name, org_id=row.org_id, created_at=row.created_at)


@router.post("/api/namespaces", status_code=201, response_model=NamespaceOut)
def create_namespace(
    body: NamespaceIn,
    _admin: Caller = Depends(require_admin),
    session: Session = Depends(get_session),
) -> NamespaceOut:
    if session.scalar(select(Namespace).where(Namespace.name == body.name)) is not None:
        raise ApiError(409, "conflict", f"namespace {body.name!r} already exists")
    row = Namespace(name=body.name, org_id=body.org_id)
    session.add(row)
    try:
        session.commit()
    except IntegrityError:  # created concurrently, between the check and the insert
        session.rollback()
        raise ApiError(409, "conflict", f"namespace {body.name!r} already exists") from None
    return _ns_out(row)


@router.get("/api/namespaces", response_model=list[NamespaceOut])
def list_namespaces(
    caller: Caller = Depends(require_caller), session: Session = Depends(get_session)
) -> list[NamespaceOut]:
    query = select(Namespace).order_by(Namespace.name)
    if not caller.admin:
        query = query.where(Namespace.id == caller.namespace_id)
    return [_ns_out(r) for r in session.scalars(query)]


@router.patch("/api/namespaces/{ns}", response_model=NamespaceOut)
def update_namespace(
    ns: str,
    body: NamespacePatch,
    request: Request,
    _admin: Caller = Depends(require_admin),
    session: Session = Depends(get_session),
) -> NamespaceOut:
    """Give a namespace (``default`` included) an org, move it, or (``orgId: null``)
    take it out of its org."""
    row = session.scalar(select(Namespace).where(Namespace.name == ns))
    if row is None:
        raise ApiError(404, "not_found", f"no namespace named {ns!r}")
    row.org_id = body.org_id
    request.app.state.notifier.publish(session, "forget:tokens")  # cached org scopes
    session.commit()
    request.app.state.token_cache.clear()
    return _ns_out(row)


@router.get("/api/namespaces/{ns}", response_model=NamespaceOut)
def get_namespace(access: Access = Depends(require_namespace)) -> NamespaceOut:
    return _ns_out(access.namespace)


@router.post("/api/namespaces/{ns}/tokens", status_code=201, response_model=TokenOut)
def create_token(
    ns: str,
    body: TokenIn | None = None,
    _admin: Caller = Depends(require_admin),
    session: Session = Depends(get_session),
) -> TokenOut:
    row = session.scalar(select(Namespace).where(Namespace.name == ns))
    if row is None:
        raise ApiError(404, "not_found", f"no namespace named {ns!r}")
    token = new_token()
    label = body.label if body else None
    expires = None
    if body is not None and body.expires_in_seconds is not None:
        expires = utcnow() + timedelta(seconds=body.expires_in_seconds)
    session.add(
        Token(
            token_hash=hash_token(token),
            namespace_id=row.id,
            admin=False,
            label=label,
            expires_at=expires,
        )
    )
    session.commit()
    return TokenOut(token=token, namespace=row.name, label=label, expires_at=expires)
