"""What the registry routes share: the scope dependency, the secret box, and the
mapping of registry errors to API errors."""

from __future__ import annotations

from typing import Any

from fastapi import Depends, Request

from ...server.deps import Access, require_namespace
from ...server.errors import ApiError
from ..crypto import SecretBox, SecretKeyError, load_or_create_key
from ..service import RegistryError, Scope

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
