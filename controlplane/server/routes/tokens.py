"""Token lifecycle: list, revoke, and the admin token's rotation.

    GET    /api/tokens                          admin: every token (never the secret)
    DELETE /api/tokens/{id}                     admin: revoke one
    POST   /api/tokens/rotate-admin             admin: a new admin token; the caller's
                                                own token is revoked in the same commit

A revocation takes effect on every replica at once: the commit carries a
``forget:tokens`` notification that empties their token caches.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from sqlalchemy import select
from sqlalchemy.orm import Session

from ...db import utcnow
from ...models import Namespace, Token
from ..access import daemon_tokens
from ..access.tokens import hash_token, new_token
from ..deps import Caller, SessionRoute, get_session, require_admin
from ..errors import ApiError
from ..schemas import TokenInfo, TokenOut

router = APIRouter(route_class=SessionRoute, prefix="/api/tokens")
MAX_ID = 2**63 - 1


def _forget_everywhere(request: Request, session: Session) -> None:
    request.app.state.notifier.publish(session, "forget:tokens")


def _info(row: Token, names: dict[int, str]) -> TokenInfo:
    return TokenInfo(
        id=row.id,
        namespace=names.get(row.namespace_id) if row.namespace_id else None,
        admin=row.admin,
        scope="admin" if row.admin else (row.scope or "namespace"),
        provider=row.provider_name,
        host=row.host,
        instance=row.instance_id or None,
        label=row.label,
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
    )


@router.get("", response_model=list[TokenInfo])
def list_tokens(
    revoked: bool = False,
    _admin: Caller = Depends(require_admin),
    session: Session = Depends(get_session),
) -> list[TokenInfo]:
    query = select(Token).order_by(Token.id)
    if not revoked:
        query = query.where(Token.revoked_at.is_(None))
    names = dict(session.execute(select(Namespace.id, Namespace.name)).tuples().all())
    return [_info(r, names) for r in session.scalars(query)]


@router.delete("/{token_id}", response_model=TokenInfo)
def revoke_token(
    token_id: int,
    request: Request,
    caller: Caller = Depends(require_admin),
    session: Session = Depends(get_session),
) -> TokenInfo:
    # an id past what a 64-bit integer column holds names no token (SQLite would
    # fail on it, not answer)
    row = session.get(Token, token_id) if 0 < token_id <= MAX_ID else None
    if row is None:
        raise ApiError(
            404, "not_found", f"no token with id {token_id} (see: lakeshore tokens list)"
        )
    if row.id == caller.token_id:
        raise ApiError(
            409,
            "conflict",
            "this is the token making the request; rotate it instead: lakeshore tokens rotate-admin",
        )
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        daemon_tokens.revoke_rooted(session, [row.id])  # a daemon's certificates from it
        _forget_everywhere(request, session)
        session.commit()
    request.app.state.token_cache.clear()
    names = dict(session.execute(select(Namespace.id, Namespace.name)).tuples().all())
    return _info(row, names)


@router.post("/rotate-admin", status_code=201, response_model=TokenOut)
def rotate_admin(
    request: Request,
    caller: Caller = Depends(require_admin),
    session: Session = Depends(get_session),
) -> TokenOut:
    """A new admin token; the one that asked is revoked in the same transaction.
    The server's admin token file is rewritten when it held the old token."""
    old = session.get(Token, caller.token_id)
    if old is None or old.revoked_at is not None:
        raise ApiError(401, "unauthorized", "unknown or revoked token")
    token = new_token()
    session.add(Token(token_hash=hash_token(token), admin=True, label="rotated admin"))
    old.revoked_at = utcnow()
    _forget_everywhere(request, session)
    session.commit()
    request.app.state.token_cache.clear()
    path = request.app.state.admin_token_file
    try:
        current = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
    except OSError:
        current = ""
    if current and hash_token(current) == old.token_hash:
        from ..bootstrap import write_secret_file

        write_secret_file(path, token + "\n")
    return TokenOut(token=token, namespace="", label="rotated admin")
