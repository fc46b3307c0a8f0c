"""Capacity routes (mounted by the app factory as ``router``).

    GET    /api/namespaces/{ns}/capacity                   providers, offers, state
    GET    /api/namespaces/{ns}/capacity/prices            the namespace's price table
    PUT    /api/namespaces/{ns}/capacity/prices            {prices: {provider|"*": {offer: $/h}}}
    POST   /api/namespaces/{ns}/capacity/decisions         a request → the decision only
    POST   /api/namespaces/{ns}/capacity/leases            a request → 201 granted | 202 pending
    GET    /api/namespaces/{ns}/capacity/leases            ?all
    GET    /api/namespaces/{ns}/capacity/leases/{id}
    POST   /api/namespaces/{ns}/capacity/leases/{id}/renew {ttlSeconds?} → 200 | 202 pending
    DELETE /api/namespaces/{ns}/capacity/leases/{id}       release

Auth: every route takes the namespace's scope through ``_scope`` (a namespace token
for its namespace or org siblings, or an admin token), as the registry and queue
routes do; the scope dependency is the one place to tighten.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session

from ..launch.routes_common import server_url
from ..registry import service as registry
from ..registry.routes.common import _call, _object, _scope
from ..server.deps import SessionRoute, get_session
from ..server.runtime import heartbeats_of
from . import leases, service

router = APIRouter(route_class=SessionRoute)
P = "/api/namespaces/{ns}/capacity"


def _ctx(request: Request) -> leases.Context:
    state = request.app.state
    return leases.Context(
        state=state,
        box=getattr(state, "registry_secret_box", None),
        server_url=server_url(request),
        live_seconds=state.settings.live_seconds,
        overlay=heartbeats_of(request.app).overlay,
    )


@router.get(P)
def capacity(
    request: Request,
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    ctx = _ctx(request)
    return _call(service.listing, session, scope, ctx.live_seconds, ctx.overlay)  # type: ignore[no-any-return]


@router.get(P + "/prices")
def get_prices(
    scope: registry.Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.prices, session, scope)  # type: ignore[no-any-return]


@router.put(P + "/prices")
def put_prices(
    body: Any = Body(...),
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(service.put_prices, session, scope, _object(body))  # type: ignore[no-any-return]


@router.post(P + "/decisions")
def decision(
    request: Request,
    body: Any = Body(...),
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(leases.decision, session, scope, _ctx(request), _object(body))  # type: ignore[no-any-return]


@router.post(P + "/leases", status_code=201)
def request_lease(
    request: Request,
    body: Any = Body(...),
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> Any:
    out = _call(leases.request, session, scope, _ctx(request), _object(body))
    if out["state"] == "pending":
        return JSONResponse(out, status_code=202)
    return out


@router.get(P + "/leases")
def list_leases(
    request: Request,
    all: bool = False,
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(leases.list_leases, session, scope, all_=all, ctx=_ctx(request))  # type: ignore[no-any-return]


@router.get(P + "/leases/{lease_id}")
def get_lease(
    lease_id: str,
    request: Request,
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(leases.get, session, scope, lease_id, _ctx(request))  # type: ignore[no-any-return]


@router.post(P + "/leases/{lease_id}/renew")
def renew_lease(
    lease_id: str,
    request: Request,
    body: Any = Body(default=None),
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> Any:
    """200 with the lease when it is granted; 202 when it is pending (its unit went
    away, or it was never granted): the expiry moved, nothing is held yet."""
    out = _call(leases.renew, session, scope, lease_id, _object(body or {}), _ctx(request))
    if out["state"] == "pending":
        return JSONResponse(out, status_code=202)
    return out


@router.delete(P + "/leases/{lease_id}")
def release_lease(
    lease_id: str,
    request: Request,
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(leases.release, session, scope, _ctx(request), lease_id)  # type: ignore[no-any-return]
