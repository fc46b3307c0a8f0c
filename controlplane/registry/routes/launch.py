"""The merge preview (``POST /api/namespaces/{ns}/launch/preview``); the launch itself
is ``controlplane.launch.routes``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from sqlalchemy.orm import Session

from ...server.deps import SessionRoute, get_session
from .. import service
from ..bodies import LaunchIn
from ..service import Scope
from .common import P, _call, _scope

router = APIRouter(route_class=SessionRoute)


@router.post(P + "/launch/preview")
def launch_preview(
    body: LaunchIn, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.preview_launch, session, scope, body.wire())
