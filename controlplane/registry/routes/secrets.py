"""Secret routes: names and kinds out, values only in."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Response
from sqlalchemy.orm import Session

from ...server.deps import SessionRoute, get_session
from ...server.errors import ApiError
from .. import service
from ..bodies import SecretIn, SecretPut
from ..crypto import SecretBox
from ..service import Scope
from .common import P, _box, _call, _scope

router = APIRouter(route_class=SessionRoute)


@router.get(P + "/secrets")
def list_secrets(
    scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> list[dict[str, Any]]:
    return _call(service.list_secrets, session, scope)


@router.post(P + "/secrets", status_code=201)
def create_secret(
    body: SecretIn,
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
    box: SecretBox = Depends(_box),
) -> dict[str, Any]:
    wire, _ = _call(service.put_secret, session, scope, box, body.wire())
    return wire  # type: ignore[no-any-return]


@router.put(P + "/secrets/{name}")
def replace_secret(
    name: str,
    response: Response,
    body: SecretPut,
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
    box: SecretBox = Depends(_box),
) -> dict[str, Any]:
    fields = body.wire()
    if fields.get("name") is not None and fields["name"] != name:
        raise ApiError(422, "validation_error", "the body's name differs from the URL's")
    wire, created = _call(
        service.put_secret,
        session,
        scope,
        box,
        {k: v for k, v in fields.items() if k != "name"},
        name=name,
        replace=True,
    )
    response.status_code = 201 if created else 200
    return wire  # type: ignore[no-any-return]


@router.delete(P + "/secrets/{name}")
def delete_secret(
    name: str,
    force: bool = False,
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(service.delete_secret, session, scope, name, force=force)
