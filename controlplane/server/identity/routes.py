"""``POST /api/namespaces/{ns}/daemon-certs``: a daemon's certificate request, signed.

Asked with a **bootstrap token** (scope ``bootstrap``: what ``connect`` or a launch
hands a host), which this spends: it is marked used (``revoked_at``) in the same
commit, by a conditional update, so of two requests with one token exactly one
gets a certificate. A request that names a ``provider`` other than the token's, or
an ``instance`` other than the one it is bound to, is refused (403) and spends
nothing. A launched instance's token is bound on its first use: the certificate
names the ``instance`` the daemon asks for (``lakeshore://ns/provider/instance``)
and may register as that instance only. Asked again by a daemon itself (its current
certificate, or a daemon token), it renews: a new certificate for the same
provider, instance and host.

A renewal asked with the current certificate ends that certificate
:func:`grace_seconds` later (5 minutes unless ``LAKESHORE_DAEMON_CERT_GRACE_SECONDS``
says otherwise): longer than a long-poll held on it (60 s at most) and than the
daemon's retries when the renewal's answer was lost (it renews again with the old
one meanwhile), so a daemon never holds two live certificates for longer, and a
stolen one is good for minutes after its daemon renewed, not for the rest of its
day. Its row's ``expiresAt`` says when, on every replica at once.

Each certificate is a row in ``tokens`` (scope ``daemon``, ``token_hash``
``x509:<serial>``, ``expires_at`` its end, label ``cert <serial>``): the gate
finds it as it finds a token, ``lakeshore tokens list`` lists it,
``lakeshore tokens revoke ID`` and everything that revokes a provider's daemon
tokens (``destroy``, ``delete``, a replaced ``connect``) revoke it on every
replica at once, and so does revoking the token it was first asked for with
(``root_token_id``: an instance's token when its instance ends).

A server that serves plain HTTP signs nothing (409): its daemons keep bearer tokens.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import StringConstraints
from sqlalchemy import update
from sqlalchemy.orm import Session

from ...db import utcnow
from ...models import Token
from ..deps import Access, SessionRoute, get_session, require_namespace
from ..errors import ApiError
from ..schemas import Name, Wire
from .issue import CsrRefused, sign
from .peer import DIGEST_PREFIX, serial_digest

router = APIRouter(route_class=SessionRoute)

GRACE_ENV = "LAKESHORE_DAEMON_CERT_GRACE_SECONDS"
GRACE_SECONDS = 300


def grace_seconds() -> float:
    """How long a certificate stays good once its daemon renewed it (see the module
    docstring); ``LAKESHORE_DAEMON_CERT_GRACE_SECONDS`` (at least 1 s) overrides."""
    raw = os.environ.get(GRACE_ENV, "").strip()
    try:
        return max(1.0, float(raw)) if raw else float(GRACE_SECONDS)
    except ValueError:
        return float(GRACE_SECONDS)


class CsrIn(Wire):
    csr: Annotated[str, StringConstraints(min_length=1, max_length=16384)]
    provider: Name | None = None  # the provider the daemon asks for (the token's, or refused)
    instance: (
        Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^\S+$")] | None
    ) = None  # the instance the daemon registers as (its --instance-id)


class DaemonCertOut(Wire):
    certificate: str  # PEM
    ca: str  # the CA that signed it (PEM)
    serial: str  # hex
    not_after: datetime
    identity: str  # lakeshore://<namespace>/<provider>[/<instance>]
    namespace: str
    provider: str


def _spend(session: Session, token_id: int) -> None:
    """Mark the bootstrap token used; 401 when it was already (or revoked)."""
    done = session.execute(
        update(Token)
        .where(Token.id == token_id, Token.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    if getattr(done, "rowcount", 0) != 1:
        raise ApiError(
            401,
            "unauthorized",
            "this bootstrap token was used already or revoked; a bootstrap token is "
            "spent by the first certificate it asks for: run connect again for a new one",
        )


def _instance(pinned: str | None, asked: str | None) -> str | None:
    """The instance the certificate is bound to: the token's, when it is pinned to
    one (asking for another is refused); for a token that pins itself on its first
    use (a launched instance's, ``""``) the instance the daemon says it is, which it
    must then register as; else none (any instance of the provider, as the token)."""
    if pinned and asked is not None and asked != pinned:
        raise ApiError(
            403,
            "forbidden",
            f"this credential is bound to instance {pinned!r}: it asks for no certificate "
            f"of {asked!r}",
        )
    if pinned == "" and asked is not None:
        return asked
    return pinned


@router.post("/api/namespaces/{ns}/daemon-certs", status_code=201, response_model=DaemonCertOut)
def issue_daemon_cert(
    body: CsrIn,
    request: Request,
    access: Access = Depends(require_namespace),
    session: Session = Depends(get_session),
) -> DaemonCertOut:
    issuer = getattr(request.app.state, "client_ca", None)
    if issuer is None:
        raise ApiError(
            409,
            "conflict",
            "this server serves plain HTTP, so it issues no client certificates; "
            "daemons keep bearer tokens (serve TLS: see docs/deploy.md)",
        )
    caller = access.caller
    row = session.get(Token, caller.token_id)
    if row is None or row.revoked_at is not None or caller.expired():
        raise ApiError(401, "unauthorized", "unknown, revoked or expired token")
    if not row.provider_name:
        raise ApiError(403, "forbidden", "this token names no provider to certify")
    if body.provider is not None and body.provider != row.provider_name:
        raise ApiError(
            403,
            "forbidden",
            f"this token is for provider {row.provider_name!r}: it asks for no certificate "
            f"of {body.provider!r}",
        )
    instance = _instance(row.instance_id, body.instance)
    if caller.scope == "bootstrap":
        _spend(session, row.id)
    try:
        signed = sign(
            body.csr,
            issuer.ca_pem,
            issuer.key(),
            namespace=access.namespace.name,
            provider=row.provider_name,
            instance=instance or None,
        )
    except CsrRefused as exc:
        session.rollback()  # a bootstrap token is not spent on a request that is refused
        raise ApiError(
            422, "validation_error", f"the certificate request is refused: {exc}"
        ) from None
    session.add(
        Token(
            token_hash=serial_digest(signed.serial),
            namespace_id=access.namespace.id,
            admin=False,
            label=f"cert {signed.serial:x}",
            expires_at=signed.not_after,
            scope="daemon",
            provider_name=row.provider_name,
            instance_id=instance,
            host=row.host,
            root_token_id=row.root_token_id or row.id,  # revoked with the token it came from
        )
    )
    renewed = row.token_hash.startswith(DIGEST_PREFIX)  # asked with its current certificate
    if renewed:
        ends = utcnow() + timedelta(seconds=grace_seconds())
        if row.expires_at is None or ends < row.expires_at:
            row.expires_at = ends
    # Spent, everywhere. A renewed certificate's cached entries (each replica keeps
    # one at most the cache's life, 60 s) end before its grace does: flushing every
    # cache on each renewal would cost a fleet of 10,000 (a renewal every few
    # seconds) a database look-up per request; only a grace shorter than that must.
    cache_life = getattr(request.app.state.token_cache, "ttl", 0.0)
    forget = caller.scope == "bootstrap" or (renewed and grace_seconds() < cache_life)
    if forget:
        request.app.state.notifier.publish(session, "forget:tokens")
    session.commit()
    if forget:
        request.app.state.token_cache.clear()
    return DaemonCertOut(
        certificate=signed.pem.decode(),
        ca=issuer.ca_pem.decode(),
        serial=f"{signed.serial:x}",
        not_after=signed.not_after,
        identity=signed.uri,
        namespace=access.namespace.name,
        provider=row.provider_name,
    )
