"""Authenticate and authorize every request before a byte of its body is read.

:class:`Gate` (pure ASGI middleware, outside the body limit and the JSON guard)
looks the request up in the app's own routes, each with its rule from
:data:`~.scopes.ROUTES` (:func:`~.scopes.rules_for`, matched as the router matches),
then:

* a ``public`` route goes on as it is;
* a ``session`` route (the dashboard, ``/ui``) takes its token from the session
  cookie instead (``ui/session.py``); a page asked for without one is sent to
  ``/ui/login``;
* no bearer token, an unknown, revoked or expired one: 401, the body unread (a
  request without one whose connection presented a daemon's client certificate
  is that certificate's, see ``identity/peer.py``);
* a token whose scope may not do what the route needs (a daemon's token outside
  its worker routes, an org sibling's write, a namespace token on an admin route):
  403, the body unread;
* otherwise the request goes on, carrying who asked (``request.state.caller``) and
  the namespace access checked (``request.state.access``), which the routes'
  dependencies reuse instead of looking again.

A known token costs a dictionary look-up (the token cache); an unknown one costs
one database look-up in a thread, shared by every concurrent request with the same
token. A request without a token costs neither.
"""

from __future__ import annotations

from typing import Any

from ..deps import access_cached, caller_cached
from ..errors import ApiError, error_response
from ..identity.peer import peer_digest
from ..limits import body_length
from ..ui.session import session_caller
from . import scopes
from .tokens import hash_token

Scope = dict[str, Any]


def _header(scope: Scope, name: bytes) -> bytes:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value)
    return b""


def _certificate_refused(state: Any, exc: ApiError) -> None:
    """Count a daemon's certificate refused after its handshake: revoked (or its
    row gone), ended, or used outside its provider's routes. (One of another CA, or
    ended by the clock, never completes the handshake: the application never sees
    it.)"""
    from ..metrics.registry import certificate_refused

    detail = str(exc.detail)
    reason = "mismatch" if exc.status == 403 else "expired" if "expired" in detail else "revoked"
    certificate_refused(state, reason)


class Gate:
    """Pure ASGI middleware; see the module docstring."""

    def __init__(self, app: Any, state: Any) -> None:
        self.app = app
        self.state = state

    def _rules(self, scope: Scope) -> list[scopes.Rule]:
        """The app's own routes with their rules (:func:`~.scopes.rules_for`), built
        with the app (``state.route_rules``), else once from the app itself."""
        rules: list[scopes.Rule] | None = getattr(self.state, "route_rules", None)
        if rules is None:
            rules = scopes.rules_for(scopes.app_routes(scope.get("app")))
            self.state.route_rules = rules
        return rules

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        found = scopes.match(scope["method"], scope["path"], self._rules(scope))
        if found.need == "public":
            await self.app(scope, receive, send)
            return
        if found.need == "session":
            await self._session(scope, receive, send)
            return
        try:
            caller, access = await self._check(scope, found)
        except ApiError as exc:
            metrics = getattr(self.state, "metrics", None)
            if metrics is not None:
                metrics.token_refused(exc.status, exc.detail)
            if not _header(scope, b"authorization") and peer_digest(scope) is not None:
                _certificate_refused(self.state, exc)
            await self._refuse(scope, receive, send, exc)
            return
        state = scope.setdefault("state", {})
        state["caller"] = caller
        if access is not None:
            state["access"] = access
        await self.app(scope, receive, send)

    async def _session(self, scope: Scope, receive: Any, send: Any) -> None:
        """A dashboard route: the session cookie instead of a bearer token; a page
        asked for without a valid one is sent to the sign-in form."""
        try:
            caller = await session_caller(self.state, scope.get("headers", []))
        except ApiError as exc:
            metrics = getattr(self.state, "metrics", None)
            if metrics is not None:
                metrics.token_refused(exc.status, exc.detail)
            if scope["method"] in ("GET", "HEAD") and b"text/html" in _header(scope, b"accept"):
                from starlette.responses import RedirectResponse

                await RedirectResponse("/ui/login", 303)(scope, receive, send)
            else:
                await self._refuse(scope, receive, send, exc)
            return
        scope.setdefault("state", {})["caller"] = caller
        await self.app(scope, receive, send)

    async def _check(self, scope: Scope, found: scopes.Match) -> tuple[Any, Any]:
        header = _header(scope, b"authorization")
        scheme, _, value = header.decode("latin-1").partition(" ")
        peer = None if header else peer_digest(scope)  # a daemon's client certificate
        if peer is None and (scheme.lower() != "bearer" or not value.strip()):
            raise ApiError(
                401, "unauthorized", "missing bearer token (Authorization: Bearer <token>)"
            )
        digest = peer or hash_token(value.strip())
        access = None
        if found.ns is not None and found.need in ("worker", "read", "write", "enroll", "bundle"):
            access = await access_cached(self.state, digest, found.ns)
            caller = access.caller
        else:
            caller = await caller_cached(self.state, digest)
        own = access.own if access is not None else True
        why = scopes.refusal(found.need, scope=caller.scope, own=own, sibling=not own)
        if why is not None:
            raise ApiError(403, "forbidden", why)
        return caller, access

    @staticmethod
    async def _refuse(scope: Scope, receive: Any, send: Any, exc: ApiError) -> None:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
        if body_length(scope) != 0:
            headers["Connection"] = "close"  # the body is never read
        response = error_response(exc.status, exc.error, exc.detail, headers or None)
        await response(scope, receive, send)
