"""Request and response bodies of the core API (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from pydantic.alias_generators import to_camel

from ..names import NAME_MAX, NAME_PATTERN

Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN, max_length=NAME_MAX)]
Text255 = Annotated[str, StringConstraints(max_length=255)]
Identity = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=64)]


class Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # PostgreSQL text cannot hold NUL (SQLite can): refuse it on every backend
        strings = value if isinstance(value, list) else [value]
        if any(isinstance(s, str) and "\x00" in s for s in strings):
            raise ValueError("text cannot contain a NUL character")
        return value


# -- namespaces and tokens ---------------------------------------------------


class NamespaceIn(Wire):
    name: Name
    org_id: Annotated[str, StringConstraints(min_length=1, max_length=128)] | None = None


class NamespacePatch(Wire):
    org_id: Annotated[str, StringConstraints(min_length=1, max_length=128)] | None


class NamespaceOut(Wire):
    name: str
    org_id: str | None = None
    created_at: datetime


BOOTSTRAP_SECONDS = 15 * 60


class TokenIn(Wire):
    """A namespace token (a person's or a program's), or with ``scope: daemon`` a
    daemon's: it works for ``provider`` only. A daemon token minted for a ``host``
    replaces (revokes) the provider's earlier daemon token for that host. With
    ``scope: metrics`` a monitoring system's: ``GET /metrics`` only. With ``scope:
    bootstrap`` a host's bootstrap token: it asks once for the daemon's certificate
    for ``provider`` (:data:`BOOTSTRAP_SECONDS` to live unless told less); with
    ``or_daemon`` too, a daemon token instead where this server signs no certificates
    (plain HTTP, as behind a TLS-terminating proxy): the answer's ``scope`` says which."""

    label: Annotated[str, StringConstraints(max_length=200)] | None = None
    expires_in_seconds: Annotated[int, Field(gt=0, le=10 * 366 * 24 * 3600)] | None = None
    scope: Literal["namespace", "daemon", "metrics", "bootstrap"] = "namespace"
    provider: Name | None = None
    host: Annotated[str, StringConstraints(min_length=1, max_length=255)] | None = None
    replaces: Annotated[str, StringConstraints(max_length=200)] | None = None
    or_daemon: bool = False


class TokenInfo(Wire):
    id: int
    namespace: str | None = None
    admin: bool
    scope: str = "namespace"
    provider: str | None = None
    host: str | None = None
    instance: str | None = None
    label: str | None = None
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None


class TokenOut(Wire):
    token: str
    namespace: str
    label: str | None = None
    expires_at: datetime | None = None
    scope: str = "namespace"
    provider: str | None = None
    replaced: list[int] = []


class TokensRevoked(Wire):
    revoked: list[int]


class WhoAmI(Wire):
    admin: bool
    namespace: str | None = None
    scope: str | None = None  # said for a daemon's token only
    provider: str | None = None


# -- workers -------------------------------------------------------------------


class WorkerIn(Wire):
    provider_name: Name
    instance_id: Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^\S+$")]
    host: Text255 = ""
    queues: Annotated[list[Name], Field(max_length=64)] = Field(default_factory=list)
    version: Annotated[str, StringConstraints(max_length=64)] = ""
    identity: Identity | None = None


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
    identity: str | None = None


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


class ClaimsQueryItem(Wire):
    name: Name
    identity: Identity | None = None


class ClaimsQuery(Wire):
    """Many providers' claims in one request (``dreamlake provider list``)."""

    providers: Annotated[list[ClaimsQueryItem], Field(max_length=10000)]


class ClaimsMany(Wire):
    claims: list[Claims]


# -- work ------------------------------------------------------------------------

WorkState = Literal["queued", "running", "succeeded", "failed", "lost"]


class WorkIn(Wire):
    command: Annotated[str, StringConstraints(min_length=1, max_length=65536)]
    queue: Name | None = None
    timeout_seconds: Annotated[float, Field(gt=0, le=7 * 24 * 3600)] | None = None


class WorkResultIn(Wire):
    exit_code: Annotated[int, Field(ge=-(2**31), le=2**31 - 1)] | None = None
    output_tail: Annotated[str, StringConstraints(max_length=65536)] = ""
    error: Annotated[str, StringConstraints(max_length=4096)] | None = None

    @field_validator("output_tail", "error", mode="before")
    @classmethod
    def _replace_nul(cls, value: Any) -> Any:
        """A command's output may hold NUL bytes; its tail keeps them as U+FFFD, as it
        keeps bytes that are not UTF-8, rather than refusing the result."""
        return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


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
