"""Request and response bodies of the core API (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

from ..names import NAME_MAX, NAME_PATTERN

Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN, max_length=NAME_MAX)]
Text255 = Annotated[str, StringConstraints(max_length=255)]


class Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


# -- namespaces and tokens ---------------------------------------------------


class NamespaceIn(Wire):
    name: Name
    org_id: Annotated[str, StringConstraints(min_length=1, max_length=128)] | None = None


class NamespaceOut(Wire):
    name: str
    org_id: str | None = None
    created_at: datetime


class TokenIn(Wire):
    label: Annotated[str, StringConstraints(max_length=200)] | None = None


class TokenOut(Wire):
    token: str
    namespace: str
    label: str | None = None


class WhoAmI(Wire):
    admin: bool
    namespace: str | None = None


# -- workers -------------------------------------------------------------------


class WorkerIn(Wire):
    provider_name: Name
    instance_id: Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^\S+$")]
    host: Text255 = ""
    queues: Annotated[list[Name], Field(max_length=64)] = Field(default_factory=list)
    version: Annotated[str, StringConstraints(max_length=64)] = ""


class WorkerRegistered(Wire):
    worker_id: str
    provider_name: str
    instance_id: str
    heartbeat_seconds: float
    live_seconds: float


class HeartbeatOut(Wire):
    worker_id: str
    last_seen: datetime
    heartbeat_seconds: float
    live_seconds: float


class WorkerOut(Wire):
    worker_id: str
    provider_name: str
    instance_id: str
    host: str
    queues: list[str]
    version: str
    state: Literal["joining", "active", "gone"]
    registered_at: datetime
    last_seen: datetime


class ClaimInstance(Wire):
    instance_id: str
    host: str
    state: Literal["joining", "active"]
    last_seen: datetime
    queues: list[str]


class Claims(Wire):
    live: int
    gone: int
    instances: list[ClaimInstance]


# -- work ------------------------------------------------------------------------

WorkState = Literal["queued", "running", "succeeded", "failed", "lost"]


class WorkIn(Wire):
    command: Annotated[str, StringConstraints(min_length=1, max_length=65536)]
    queue: Name | None = None
    timeout_seconds: Annotated[float, Field(gt=0, le=7 * 24 * 3600)] | None = None


class WorkResultIn(Wire):
    exit_code: int | None = None
    output_tail: Annotated[str, StringConstraints(max_length=65536)] = ""
    error: Annotated[str, StringConstraints(max_length=4096)] | None = None


class WorkOut(Wire):
    id: str
    provider_name: str
    queue: str | None = None
    command: str
    timeout_seconds: float | None = None
    state: WorkState
    worker_id: str | None = None
    exit_code: int | None = None
    output_tail: str | None = None
    error: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
