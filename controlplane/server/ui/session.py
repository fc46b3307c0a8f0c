"""The dashboard's session cookie: the token a person signed in with, sealed with
the server's secret key (Fernet: encrypted and authenticated), with the time it was
sealed. Every replica sharing the key reads it; a key rotation ends every session.

The cookie never holds a session of its own: each request unseals the token and
checks it as a bearer token is checked (the token cache, revocation, expiry), then
checks its scope (:data:`SCOPES`). A session older than :data:`SESSION_SECONDS`
is refused whatever its token.
"""

from __future__ import annotations

import time
from typing import Any

from ..access.tokens import hash_token
from ..errors import ApiError

COOKIE = "lakeshore_session"
SESSION_SECONDS = 12 * 3600
SCOPES = ("admin", "metrics")
"""The token scopes that may open the dashboard."""

_SEAL_NS = "\x00dashboard"
_SEAL_NAME = "session"


def seal(box: Any, token: str, now: float | None = None) -> str:
    """The cookie's value for ``token`` (``box``: the server's ``SecretBox``)."""
    issued = int(time.time() if now is None else now)
    return str(box.encrypt(f"{issued}:{token}", namespace=_SEAL_NS, name=_SEAL_NAME))


def unseal(box: Any, value: str, now: float | None = None) -> str | None:
    """The token a cookie holds, or None when it is not one this server sealed, or
    it is older than :data:`SESSION_SECONDS`."""
    from ...registry.crypto import SecretDecryptError

    if box is None or not value or len(value) > 4096:
        return None
    try:
        plain = box.decrypt(value, namespace=_SEAL_NS, name=_SEAL_NAME)
    except (SecretDecryptError, ValueError, UnicodeError):
        return None
    issued, _, token = plain.partition(":")
    if not issued.isdigit() or not token:
        return None
    age = (time.time() if now is None else now) - int(issued)
    return token if -60 <= age < SESSION_SECONDS else None


def cookie_of(headers: Any) -> str | None:
    """The session cookie's value from an ASGI scope's headers, if any."""
    for key, value in headers:
        if key != b"cookie":
            continue
        for part in bytes(value).decode("latin-1").split(";"):
            name, _, found = part.strip().partition("=")
            if name == COOKIE:
                return found.strip().strip('"') or None
    return None


def refusal(scope: str) -> str | None:
    """Why a token of ``scope`` may not open the dashboard (None: it may)."""
    if scope in SCOPES:
        return None
    return "the dashboard needs an admin token or a metrics token"


async def token_caller(state: Any, token: str) -> Any:
    """The caller holding ``token`` when it may open the dashboard; else the
    ``ApiError`` (401 unknown, revoked or expired; 403 another scope)."""
    from ..deps import caller_cached

    caller = await caller_cached(state, hash_token(token))
    why = refusal(caller.scope)
    if why is not None:
        raise ApiError(403, "forbidden", why)
    return caller


async def session_caller(state: Any, headers: Any) -> Any:
    """Who a request's session cookie signs in (see :func:`token_caller`)."""
    value = cookie_of(headers)
    if value is None:
        raise ApiError(401, "unauthorized", "missing session: sign in at /ui/login")
    token = unseal(getattr(state, "registry_secret_box", None), value)
    if token is None:
        raise ApiError(
            401,
            "unauthorized",
            "unknown session (signed out, too old, or sealed with another key): "
            "sign in at /ui/login",
        )
    return await token_caller(state, token)


def set_cookie(value: str, *, secure: bool, max_age: int = SESSION_SECONDS) -> str:
    """The ``Set-Cookie`` header's value for the session (empty value: sign out)."""
    parts = [
        f"{COOKIE}={value}",
        "Path=/ui",
        f"Max-Age={max_age}",
        "HttpOnly",
        "SameSite=Strict",
    ]
    if secure:
        parts.append("Secure")
    return "; ".join(parts)
