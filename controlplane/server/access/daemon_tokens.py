"""Daemon tokens die when their reason does: a new ``connect`` to a host replaces
the provider's token there; ``destroy`` and ``delete`` revoke them all (a daemon's certificates are daemon
tokens' rows too: see ``identity/routes.py``).

:func:`revoke` marks the tokens revoked in the caller's transaction and publishes
``forget:tokens`` with it, so every replica drops its cached copy at the commit.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from ...db import utcnow
from ...models import Token


def live_daemon_tokens(namespace_id: int, provider: str, host: str | None = None) -> Select[Any]:
    """The live daemon tokens, certificates and unspent bootstrap tokens of
    ``provider`` (on ``host`` only, when given): what :func:`revoke` revokes. Every
    token minted for a host (each ``connect``) asks this first, so it reads them
    through the index on (namespace, provider, host), never through every token of
    the namespace."""
    query = select(Token).where(
        Token.namespace_id == namespace_id,
        Token.scope.in_(("daemon", "bootstrap")),
        Token.provider_name == provider,
        Token.revoked_at.is_(None),
    )
    return query if host is None else query.where(Token.host == host)


def revoke(
    session: Session,
    namespace_id: int,
    provider: str,
    *,
    host: str | None = None,
    notifier: Any = None,
) -> list[int]:
    """Revoke the live daemon tokens of ``provider`` (on ``host`` only, when given),
    its certificates and its bootstrap tokens not spent yet (a launched instance's,
    a host's); returns their ids. Nothing is committed here."""
    query = live_daemon_tokens(namespace_id, provider, host)
    rows = list(session.scalars(query.with_for_update()))
    now = utcnow()
    for row in rows:
        row.revoked_at = now
    if rows and notifier is not None:
        notifier.publish(session, "forget:tokens")
    return [r.id for r in rows]


def revoke_held(
    session: Session, namespace_id: int, token: str, *, notifier: Any = None
) -> list[int]:
    """Revoke ``token`` (the one an install held, which a new one replaces) when it
    is a live daemon token of this namespace (or a namespace token minted for a
    daemon before tokens had scopes, labelled ``nymph ...``); an admin token or a
    person's token is never revoked here. Returns its id, or nothing."""
    from .tokens import hash_token

    row = session.scalar(select(Token).where(Token.token_hash == hash_token(token.strip())))
    if row is None or row.admin or row.revoked_at is not None or row.namespace_id != namespace_id:
        return []
    if row.scope != "daemon" and not (row.label or "").startswith("nymph "):
        return []  # a person's or a program's token, not one minted for a daemon
    row.revoked_at = utcnow()
    revoke_rooted(session, [row.id])  # and the certificates it led to
    if notifier is not None:
        notifier.publish(session, "forget:tokens")
    return [row.id]


def revoke_rooted(session: Session, token_ids: list[int]) -> int:
    """Revoke the live daemon certificates asked for with any of ``token_ids``
    (their rows' ``root_token_id``, see ``identity/routes.py``); how many. The
    caller publishes ``forget:tokens`` with its commit."""
    from sqlalchemy import update

    if not token_ids:
        return 0
    done = session.execute(
        update(Token)
        .where(Token.root_token_id.in_(token_ids), Token.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    return int(getattr(done, "rowcount", 0) or 0)
