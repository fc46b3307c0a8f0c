"""Provider routes: list, create, read, patch, soft delete, restore, offline test."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from sqlalchemy.orm import Session

from ...server.deps import SessionRoute, get_session
from .. import service
from ..bodies import ProviderIn, ProviderPatch
from ..crypto import SecretBox
from ..service import Scope
from .common import P, _box, _call, _scope

router = APIRouter(route_class=SessionRoute)


@router.get(P + "/providers")
def list_providers(
    hidden: bool = False,
    deleted: bool = False,
    all: bool = False,
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> list[dict[str, Any]]:
    return _call(
        service.list_providers, session, scope, hidden=hidden or all, deleted=deleted or all
    )


@router.post(P + "/providers", status_code=201)
def create_provider(
    body: ProviderIn, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.create_provider, session, scope, body.wire())


@router.get(P + "/providers/{name}")
def get_provider(
    name: str, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.get_provider, session, scope, name)


@router.patch(P + "/providers/{name}")
def update_provider(
    name: str,
    body: ProviderPatch,
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(service.update_provider, session, scope, name, body.wire())


@router.delete(P + "/providers/{name}")
def delete_provider(
    name: str, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.delete_provider, session, scope, name)


@router.post(P + "/providers/{name}/restore")
def restore_provider(
    name: str, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.restore_provider, session, scope, name)


@router.post(P + "/providers/{name}/test")
def test_provider(
    name: str,
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
    box: SecretBox = Depends(_box),
) -> dict[str, Any]:
    report = _call(service.check_provider_row, session, scope, box, name)
    return report.to_wire()  # type: ignore[no-any-return]
