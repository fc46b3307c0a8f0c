"""Health, namespaces and tokens."""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Depends, Request
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ...db import utcnow
from ...launch.tokens import signs_certificates
from ...models import Namespace, Token
from ...rowlock import lock_row
from ..access import daemon_tokens
from ..access.tokens import hash_token, new_token
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
from ..schemas import (
    BOOTSTRAP_SECONDS,
    NamespaceIn,
    NamespaceOut,
    NamespacePatch,
    TokenIn,
    TokenOut,
    TokensRevoked,
    WhoAmI,
)

router = APIRouter(route_class=SessionRoute)


@router.get("/healthz")
async def healthz(request: Request) -> dict[str, object]:
    """The process answers: on the event loop, no thread, no database (see /readyz)."""
    from ..health import healthy

    return healthy(request.app)


@router.get("/readyz")
async def readyz(request: Request) -> dict[str, object]:
    """The database answers too: ``SELECT 1`` on the readiness probe's own thread
    (never the shared pool, which a flood of requests may have busy), within
    :data:`~..health.READY_TIMEOUT` seconds, else 503."""
    from ..health import database_ready, ready

    why = await database_ready(request.app)
    if why is not None:
        raise ApiError(503, "unavailable", why)
    return ready(request.app)


@router.get("/api/whoami", response_model=WhoAmI, response_model_exclude_unset=True)
def whoami(
    caller: Caller = Depends(require_caller), session: Session = Depends(get_session)
) -> WhoAmI:
    ns = session.get(Namespace, caller.namespace_id) if caller.namespace_id else None
    out = WhoAmI(admin=caller.admin, namespace=ns.name if ns else None)
    if caller.scope == "daemon":
        out.scope, out.provider = "daemon", caller.provider
    return out


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
    if row is None or not lock_row(session, row):
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
    request: Request,
    body: TokenIn | None = None,
    _admin: Caller = Depends(require_admin),
    session: Session = Depends(get_session),
) -> TokenOut:
    """A namespace token, or (``scope: daemon``) a daemon's token for one provider,
    or (``scope: bootstrap``) a host's one-use token for its daemon's certificate
    (``orDaemon``: a daemon token where this server signs no certificates).
    A daemon token for a ``host`` replaces the provider's live daemon token for
    that host in the same commit: one daemon token per provider host."""
    row = session.scalar(select(Namespace).where(Namespace.name == ns))
    if row is None:
        raise ApiError(404, "not_found", f"no namespace named {ns!r}")
    body = body or TokenIn()
    hosted = body.scope in ("daemon", "bootstrap")  # a daemon's, or a host's bootstrap
    if hosted and body.provider is None:
        raise ApiError(422, "validation_error", f"a {body.scope} token names its provider")
    if not hosted and (body.provider, body.host, body.replaces) != (None,) * 3:
        raise ApiError(
            422,
            "validation_error",
            "provider and host are for daemon and bootstrap tokens (scope: daemon or bootstrap)",
        )
    if body.or_daemon and body.scope != "bootstrap":
        raise ApiError(422, "validation_error", "orDaemon is for bootstrap tokens")
    scope = body.scope
    if body.or_daemon and not signs_certificates(request.app.state):
        # plain HTTP (behind a TLS-terminating proxy): a certificate is never signed
        # here, so the host's daemon keeps a bearer token, as a launch decides
        scope = "daemon"
    token = new_token()
    expires = None
    seconds = body.expires_in_seconds
    if scope == "bootstrap":  # minutes to live, never longer
        seconds = min(seconds or BOOTSTRAP_SECONDS, BOOTSTRAP_SECONDS)
    if seconds is not None:
        expires = utcnow() + timedelta(seconds=seconds)
    replaced: list[int] = []
    if hosted and body.host is not None:
        assert body.provider is not None
        replaced = daemon_tokens.revoke(
            session, row.id, body.provider, host=body.host, notifier=request.app.state.notifier
        )
    if body.replaces:
        replaced += daemon_tokens.revoke_held(
            session, row.id, body.replaces, notifier=request.app.state.notifier
        )
    session.add(
        Token(
            token_hash=hash_token(token),
            namespace_id=row.id,
            admin=False,
            label=body.label,
            expires_at=expires,
            scope=scope,
            provider_name=body.provider,
            host=body.host,
        )
    )
    session.commit()
    if replaced:
        request.app.state.token_cache.clear()
    return TokenOut(
        token=token,
        namespace=row.name,
        label=body.label,
        expires_at=expires,
        scope=scope,
        provider=body.provider,
        replaced=replaced,
    )


@router.delete("/api/namespaces/{ns}/providers/{name}/tokens", response_model=TokensRevoked)
def revoke_provider_tokens(
    name: str,
    request: Request,
    host: str | None = None,
    access: Access = Depends(require_namespace),
    session: Session = Depends(get_session),
) -> TokensRevoked:
    """Revoke the daemon tokens of provider ``name`` (of one ``host``, when given):
    what ``dreamlake provider destroy`` and ``delete`` do, so a removed install's
    token stops working everywhere at once."""
    revoked = daemon_tokens.revoke(
        session, access.namespace.id, name, host=host, notifier=request.app.state.notifier
    )
    session.commit()
    if revoked:
        request.app.state.token_cache.clear()
    return TokensRevoked(revoked=revoked)
