"""An instance's token: minted for a launch that leaves a daemon behind, revoked
when its instance is over."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from ..db import utcnow
from ..models import Token
from ..server.access.tokens import hash_token, new_token


def _mint(session: Session, namespace_id: int, label: str, provider: str) -> tuple[str, int]:
    """An instance's token: a daemon token for ``provider``, pinned to the first
    instance that registers with it (``instance_id=""``; see server/scopes.py)."""
    token = new_token()
    row = Token(
        token_hash=hash_token(token),
        namespace_id=namespace_id,
        admin=False,
        label=label,
        scope="daemon",
        provider_name=provider,
        instance_id="",
    )
    session.add(row)
    session.flush()
    return token, row.id


def revoke(session: Session, token_id: int | None, state: Any) -> None:
    """Revoke an instance's token when ``session`` commits, and make every replica
    forget it then (``forget:tokens``), as the tokens route does: a cached token
    would otherwise stay good for up to a minute after its instance is gone."""
    if token_id is None:
        return
    from ..server.access.daemon_tokens import revoke_rooted

    row = session.get(Token, token_id)
    if row is not None and row.revoked_at is None:
        row.revoked_at = utcnow()
        revoke_rooted(session, [row.id])  # the certificates its daemon asked for with it
        notifier = getattr(state, "notifier", None)
        if notifier is not None:
            notifier.publish(session, "forget:tokens")
        cache = getattr(state, "token_cache", None)
        if cache is not None:
            event.listen(session, "after_commit", lambda _s: cache.clear(), once=True)
