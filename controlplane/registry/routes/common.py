"""What the registry routes share: the scope dependency, the secret box, and the
mapping of registry errors to API errors."""

from __future__ import annotations

from typing import Any

from fastapi import Depends, Request

from ...server.deps import Access, require_namespace
from ...server.errors import ApiError
from ..crypto import SecretBox
from ..service import RegistryError, Scope
from ..service.common import Limits

P = "/api/namespaces/{ns}"


async def _scope(request: Request, access: Access = Depends(require_namespace)) -> Scope:
    settings = request.app.state.settings
    return Scope(
        namespace=access.namespace,
        org_ids=access.namespace_ids,
        unscoped=bool(getattr(request.app.state, "unscoped_listings", True)),
        write_ids=None if access.caller.admin else (access.namespace.id,),
        limits=Limits(
            max_rows=settings.max_rows,
            max_secrets=settings.max_secrets,
            max_kwargs_bytes=settings.max_kwargs_bytes,
        ),
    )


async def _box(request: Request) -> SecretBox:
    """The server's secret box, loaded and checked against the database at start."""
    box: SecretBox | None = getattr(request.app.state, "registry_secret_box", None)
    if box is None:
        raise ApiError(503, "unavailable", "the secret key is not loaded on this server")
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
