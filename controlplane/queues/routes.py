"""Queue routes (included by ``launch.routes``).

GET    /api/namespaces/{ns}/queues
POST   /api/namespaces/{ns}/queues                {name, provider, mode?, min?, max?,
                                                   idleSeconds?, idleAction?} → 201
PATCH  /api/namespaces/{ns}/queues/{name}
DELETE /api/namespaces/{ns}/queues/{name}
GET    /api/namespaces/{ns}/queues/{name}/status  pending work, workers, decisions
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Request
from sqlalchemy.orm import Session

from ..launch.routes_common import server_url
from ..registry import service as registry
from ..registry.routes.common import _call, _object, _scope
from ..server.deps import get_session
from . import service

router = APIRouter()
P = "/api/namespaces/{ns}/queues"


@router.get(P)
def list_queues(
    scope: registry.Scope = Depends(_scope), session: Session = Depends(get_session)
) -> list[dict[str, Any]]:
    return _call(service.list_queues, session, scope)  # type: ignore[no-any-return]


@router.post(P, status_code=201)
def add_queue(
    request: Request,
    body: Any = Body(...),
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(service.add, session, scope, _object(body), server_url(request))  # type: ignore[no-any-return]


@router.patch(P + "/{name}")
def update_queue(
    name: str,
    request: Request,
    body: Any = Body(...),
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(  # type: ignore[no-any-return]
        service.update, session, scope, name, _object(body), server_url(request)
    )


@router.delete(P + "/{name}")
def remove_queue(
    name: str, scope: registry.Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.remove, session, scope, name)  # type: ignore[no-any-return]


@router.get(P + "/{name}/status")
def queue_status(
    name: str,
    events: int = 20,
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(service.status, session, scope, name, max(1, min(events, 500)))  # type: ignore[no-any-return]
