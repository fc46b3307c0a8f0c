"""The registry's HTTP routes (mounted by the core app factory as ``router``).

    /api/namespaces/{ns}/providers                 GET (?hidden ?deleted ?all), POST
    /api/namespaces/{ns}/providers/{name}          GET, PATCH, DELETE (soft)
    /api/namespaces/{ns}/providers/{name}/restore  POST
    /api/namespaces/{ns}/providers/{name}/test     POST (offline checks)
    /api/namespaces/{ns}/secrets                   GET (names and kinds only), POST
    /api/namespaces/{ns}/secrets/{name}            PUT, DELETE (?force)
    /api/namespaces/{ns}/modes                     GET, POST
    /api/namespaces/{ns}/modes/{name}              GET, PATCH (merge patch), DELETE
    /api/namespaces/{ns}/launch/preview            POST {mode?, runConfig?, provider?}
    (POST /api/namespaces/{ns}/launch lives in ``controlplane.launch.routes``)

Secret values go in (POST/PUT) and never come out.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Request, Response
from sqlalchemy.orm import Session

from ..server.deps import Access, get_session, require_namespace
from ..server.errors import ApiError
from . import service
from .crypto import SecretBox, SecretKeyError, load_or_create_key
from .service import RegistryError, Scope

router = APIRouter()
P = "/api/namespaces/{ns}"


def _scope(access: Access = Depends(require_namespace)) -> Scope:
    return Scope(namespace=access.namespace, org_ids=access.namespace_ids)


def _box(request: Request) -> SecretBox:
    box = getattr(request.app.state, "registry_secret_box", None)
    if box is None:
        try:
            key = load_or_create_key(request.app.state.settings.data_dir)
        except SecretKeyError as exc:
            raise ApiError(503, "unavailable", f"secret key unavailable: {exc}") from None
        box = SecretBox(key)
        request.app.state.registry_secret_box = box
    return box


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except RegistryError as exc:
        raise ApiError(exc.status, exc.code, exc.detail) from None


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(422, "validation_error", "the request body must be a JSON object")
    return body


# --- providers ---------------------------------------------------------------


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
    body: Any = Body(...), scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.create_provider, session, scope, _object(body))


@router.get(P + "/providers/{name}")
def get_provider(
    name: str, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.get_provider, session, scope, name)


@router.patch(P + "/providers/{name}")
def update_provider(
    name: str,
    body: Any = Body(...),
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(service.update_provider, session, scope, name, _object(body))


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


# --- secrets -----------------------------------------------------------------


@router.get(P + "/secrets")
def list_secrets(
    scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> list[dict[str, Any]]:
    return _call(service.list_secrets, session, scope)


@router.post(P + "/secrets", status_code=201)
def create_secret(
    body: Any = Body(...),
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
    box: SecretBox = Depends(_box),
) -> dict[str, Any]:
    wire, _ = _call(service.put_secret, session, scope, box, _object(body))
    return wire  # type: ignore[no-any-return]


@router.put(P + "/secrets/{name}")
def replace_secret(
    name: str,
    response: Response,
    body: Any = Body(...),
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
    box: SecretBox = Depends(_box),
) -> dict[str, Any]:
    body = _object(body)
    if "name" in body and body["name"] != name:
        raise ApiError(422, "validation_error", "the body's name differs from the URL's")
    wire, created = _call(
        service.put_secret,
        session,
        scope,
        box,
        {k: v for k, v in body.items() if k != "name"},
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


# --- modes -------------------------------------------------------------------


@router.get(P + "/modes")
def list_modes(
    scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> list[dict[str, Any]]:
    return _call(service.list_modes, session, scope)


@router.post(P + "/modes", status_code=201)
def create_mode(
    body: Any = Body(...), scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.create_mode, session, scope, _object(body))


@router.get(P + "/modes/{name}")
def get_mode(
    name: str, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.get_mode, session, scope, name)


@router.patch(P + "/modes/{name}")
def update_mode(
    name: str,
    body: Any = Body(...),
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    return _call(service.update_mode, session, scope, name, _object(body))


@router.delete(P + "/modes/{name}")
def delete_mode(
    name: str, scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.delete_mode, session, scope, name)


# --- launch ------------------------------------------------------------------


@router.post(P + "/launch/preview")
def launch_preview(
    body: Any = Body(...), scope: Scope = Depends(_scope), session: Session = Depends(get_session)
) -> dict[str, Any]:
    return _call(service.preview_launch, session, scope, _object(body))
