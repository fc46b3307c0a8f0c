"""``PUT /api/namespaces/{ns}/providers/{name}/observed``: the engine's watcher
publishes what it saw of a provider (its derived status, drift, next action, pass
time). A namespace token, or the provider's own daemon token (no other provider's);
the document comes back as ``observed`` on every read of the row."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, StrictStr, model_validator
from sqlalchemy.orm import Session

from ...server.access import scopes
from ...server.deps import Access, SessionRoute, get_session, require_namespace
from ...server.errors import ApiError
from ...server.json_guard import refuse_nul
from ..service import Scope
from ..service.observed import put_observed
from .common import P, _call, _scope

router = APIRouter(route_class=SessionRoute)


class ObservedIn(BaseModel):
    """What a watcher saw of one provider; members beyond ``status`` are kept as sent
    (``targetStatus``, ``degraded``, ``drift``, ``nextAction``, ``passAt``, ``watcher``)."""

    model_config = ConfigDict(extra="allow")

    status: StrictStr = Field(description="The provider's status as the engine derived it.")

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        refuse_nul(data)
        return data


@router.put(P + "/providers/{name}/observed")
def publish_observed(
    name: str,
    body: ObservedIn,
    access: Access = Depends(require_namespace),
    scope: Scope = Depends(_scope),
    session: Session = Depends(get_session),
) -> dict[str, Any]:
    c = access.caller
    if not scopes.worker_allowed(c.scope, c.provider, c.instance, name, None):
        raise ApiError(
            403, "forbidden", f"this daemon token works for its own provider only, not {name!r}"
        )
    return _call(put_observed, session, scope, name, body.model_dump())  # type: ignore[no-any-return]
