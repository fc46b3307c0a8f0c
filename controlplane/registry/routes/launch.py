"""Launch routes: the merge preview and the server-side launch."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session

from ...server.deps import SessionRoute, get_session
from .. import service
from ..bodies import LaunchIn
from ..crypto import SecretBox
from ..service import Scope
from .common import P, _box, _call, _scope

router = APIRouter(route_class=SessionRoute)


@router.post(P + "/launch/preview")
def launch_preview(
    body: LaunchIn, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.preview_launch, session, scope, body.wire())


@router.post(P + "/launch", status_code=201)
def launch(
    request: Request,
    body: LaunchIn,
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
    box: SecretBox = Depends(_box),
) -> dict[str, Any]:
    launchers = getattr(request.app.state, "registry_launchers", None) or {}
    return _call(service.launch, session, scope, box, body.wire(), launchers)
