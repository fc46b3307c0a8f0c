"""The progress event's model (pydantic), kept apart from :mod:`.events` so that a
verb run with no sink installed never imports pydantic."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .event_types import EventType


class ProgressEvent(BaseModel):
    """One progress event, as ``--events`` writes it (one JSON object per line)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )

    type: EventType
    seq: int = Field(ge=1, description="1 for the verb's first event, then +1 per event.")
    elapsed: float = Field(ge=0, description="Seconds since the verb started.")
    verb: str = Field(description="The verb that is running: create, plan, apply, connect, ...")
    provider: str = Field(description="The provider's name.")
    step: str | None = Field(
        default=None, description="The phase this event belongs to (init, plan, apply, upload...)."
    )
    address: str | None = Field(
        default=None, description="The resource's address, for resource-level events."
    )
    action: str | None = Field(
        default=None, description="What happens to the resource: create, update, delete, read..."
    )
    resource_elapsed: float | None = Field(
        default=None,
        ge=0,
        description="Seconds this resource has been in flight, as the backend reports it.",
    )
    message: str | None = Field(default=None, description="One line for a person.")
    changes: dict[str, int] | None = Field(
        default=None, description="summary: counts by kind (add, change, remove, import)."
    )
    total: int | None = Field(
        default=None, ge=0, description="Resources this step will touch, when known."
    )
    status: str | None = Field(default=None, description="end: the result's status.")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_json(self) -> str:
        return json.dumps(self.to_wire(), ensure_ascii=False, separators=(",", ":"))


__all__ = ["ProgressEvent"]
