"""An instance's token: minted for a launch that leaves a daemon behind, revoked
when its instance is over.

On a server that signs daemons' certificates (it serves TLS) the token is a
**bootstrap token** (scope ``bootstrap``): one use, good only to fetch the daemon
bundle (until spent) and to ask once for the daemon's certificate
(``server/identity/``), for the launch's provider; the certificate it is spent on
is pinned to the first instance that registers with it. It lives
:func:`bootstrap_seconds`: as long as the server waits for the instance's daemon
to register (the start timeout, a queued SLURM job's wait included: past it the
instance is failed anyway) and a few minutes for the launcher's own call; a retry
of a launch still under way renews it (:func:`renew`).

On a plain-HTTP server, which signs nothing, it is a daemon token as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import event, update
from sqlalchemy.orm import Session

from ..db import utcnow
from ..models import Token
from ..server.access.tokens import hash_token, new_token
from .tracking import start_timeout

LAUNCHER_SECONDS = 300.0
"""What a bootstrap token's life adds to the start timeout for the launcher's call
itself (an SSH install, a cloud's answer) before the instance's start is counted."""


def bootstrap_seconds() -> float:
    """How long a launch's bootstrap token lives: the start timeout
    (``LAKESHORE_QUEUE_START_TIMEOUT``, 900 s by default) plus :data:`LAUNCHER_SECONDS`."""
    return start_timeout() + LAUNCHER_SECONDS


def signs_certificates(state: Any) -> bool:
    """The server signs daemons' certificates (it serves TLS): a launch hands its
    instances bootstrap tokens."""
    return getattr(state, "client_ca", None) is not None


def _mint(
    session: Session, namespace_id: int, label: str, provider: str, *, bootstrap: bool = False
) -> tuple[str, int]:
    """An instance's token for ``provider``, pinned to the first instance that
    registers with it (``instance_id=""``; see server/scopes.py): a bootstrap token
    when ``bootstrap`` (see the module docstring), else a daemon token."""
    token = new_token()
    row = Token(
        token_hash=hash_token(token),
        namespace_id=namespace_id,
        admin=False,
        label=label,
        scope="bootstrap" if bootstrap else "daemon",
        provider_name=provider,
        instance_id="",
        expires_at=utcnow() + timedelta(seconds=bootstrap_seconds()) if bootstrap else None,
    )
    session.add(row)
    session.flush()
    return token, row.id


def renew(session: Session, token_ids: Sequence[int], state: Any) -> None:
    """A retried launch hands the same tokens again: its unspent bootstrap tokens
    live :func:`bootstrap_seconds` from now (a spent or revoked one stays so)."""
    if not token_ids:
        return
    done = session.execute(
        update(Token)
        .where(
            Token.id.in_(list(token_ids)), Token.scope == "bootstrap", Token.revoked_at.is_(None)
        )
        .values(expires_at=utcnow() + timedelta(seconds=bootstrap_seconds()))
    )
    if getattr(done, "rowcount", 0):
        _forget_everywhere(session, state)


def _forget_everywhere(session: Session, state: Any) -> None:
    """Every replica drops its cached tokens when ``session`` commits."""
    notifier = getattr(state, "notifier", None)
    if notifier is not None:
        notifier.publish(session, "forget:tokens")
    cache = getattr(state, "token_cache", None)
    if cache is not None:
        event.listen(session, "after_commit", lambda _s: cache.clear(), once=True)


def revoke(session: Session, token_id: int | None, state: Any) -> None:
    """Revoke an instance's token when ``session`` commits, and every certificate
    rooted in it (asked for with it, and their renewals), and make every replica
    forget them then (``forget:tokens``), as the tokens route does: a cached token
    would otherwise stay good for up to a minute after its instance is gone. A
    bootstrap token already spent on a certificate is revoked already: its
    certificates are revoked all the same."""
    if token_id is None:
        return
    from ..server.access.daemon_tokens import revoke_rooted

    row = session.get(Token, token_id)
    if row is None:
        return
    changed = False
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        changed = True
    if revoke_rooted(session, [row.id]):  # the certificates its daemon asked for with it
        changed = True
    if changed:
        _forget_everywhere(session, state)
