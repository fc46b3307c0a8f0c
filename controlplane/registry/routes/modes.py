"""Mode routes: stored RunConfigs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from sqlalchemy.orm import Session

from ...server.deps import SessionRoute, get_session
from .. import service
from ..bodies import ModeIn, ModePatch
from ..service import Scope
from .common import P, _call, _scope

router = APIRouter(route_class=SessionRoute)


@router.get(P + "/modes")
def list_modes(
    scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> list[dict[str, Any]]:
    return _call(service.list_modes, session, scope)


@router.post(P + "/modes", status_code=201)
def create_mode(
    body: ModeIn, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.create_mode, session, scope, body.wire())


@router.get(P + "/modes/{name}")
def get_mode(
    name: str, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.get_mode, session, scope, name)


@router.patch(P + "/modes/{name}")
def update_mode(
    name: str,
    body: ModePatch,
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(service.update_mode, session, scope, name, body.wire())


@router.delete(P + "/modes/{name}")
def delete_mode(
    name: str, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.delete_mode, session, scope, name)
