"""What every registry operation shares: the error it raises, the scope it runs in,
name checks, timestamps and the commit that turns a unique-index race into 409."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ...models import Namespace
from ...names import NAME_MAX
from ...text import mark_unencodable
from .. import tombstone
from ..launchers import (
    NAME_RULE,
    valid_name,
)


class RegistryError(Exception):
    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail


def unprocessable(detail: str) -> RegistryError:
    return RegistryError(422, "validation_error", detail)


INVALID_TEXT = "invalidText"
"""The wire field naming the places of stored strings UTF-8 cannot encode."""


def answerable(wire: dict[str, Any]) -> dict[str, Any]:
    """A row's wire form as an answer can carry it: a string stored before the JSON
    guard refused text UTF-8 cannot encode (a lone surrogate) is shown escaped
    (``\\udcff``) and its place listed in ``invalidText`` (``["kwargs.host"]``), so
    the row never breaks a listing and says what to repair (docs/controlplane.md)."""
    clean, places = mark_unencodable(wire)
    if places:
        clean[INVALID_TEXT] = places
    return clean  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Limits:
    """What one namespace may hold (``Settings.max_*``)."""

    max_rows: int = 10_000
    max_secrets: int = 1_000
    max_kwargs_bytes: int = 64 * 1024


@dataclass(frozen=True)
class Scope:
    """Who is asking about what: the URL's namespace and the ids its org spans."""

    namespace: Namespace
    org_ids: tuple[int, ...]
    unscoped: bool = True
    """Whether a namespace without an org lists every namespace's rows (the server's
    ``unscoped_listings`` setting)."""
    limits: Limits | None = None
    write_ids: tuple[int, ...] | None = None
    """The namespaces whose rows the caller may change (None: every one it looks
    up, for an admin); an org sibling's rows are read-only."""

    @property
    def has_org(self) -> bool:
        return self.namespace.org_id is not None

    @property
    def lookup_ids(self) -> tuple[int, ...]:
        return self.org_ids if self.has_org else (self.namespace.id,)


def check_writable(session: Session, scope: Scope, namespace_id: int, what: str) -> None:
    """403 when ``what`` (found through the org's lookups) lives in a sibling
    namespace: org siblings see each other's rows but change only their own."""
    if scope.write_ids is None or namespace_id in scope.write_ids:
        return
    owner = ns_names(session, [namespace_id]).get(namespace_id, "another namespace")
    raise RegistryError(
        403,
        "forbidden",
        f"{what} belongs to namespace {owner!r}, an org sibling: siblings are read-only; "
        f"change it with a token of {owner!r}",
    )


def iso(dt: datetime | None) -> str | None:
    return tombstone.iso(dt) if dt is not None else None


def ns_names(session: Session, ids: Sequence[int]) -> dict[int, str]:
    rows = session.execute(select(Namespace.id, Namespace.name).where(Namespace.id.in_(ids)))
    return {i: n for i, n in rows}


def check_name(name: Any, what: str = "provider") -> str:
    if not isinstance(name, str) or not valid_name(name) or len(name) > NAME_MAX:
        raise unprocessable(
            f"{what} name {name!r} is invalid: names match {NAME_RULE} (at most {NAME_MAX} characters)"
        )
    return name


def commit_or_conflict(session: Session, conflict: str) -> None:
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise RegistryError(409, "conflict", conflict) from None


def limits_of(scope: Scope) -> Limits:
    return scope.limits or Limits()


def check_room(session: Session, scope: Scope, table: Any, what: str, limit: int) -> None:
    """422 when the namespace already holds ``limit`` rows of ``table``."""
    from sqlalchemy import func

    count = session.scalar(
        select(func.count()).select_from(table).where(table.namespace_id == scope.namespace.id)
    )
    if count is not None and count >= limit:
        raise RegistryError(
            422,
            "limit_reached",
            f"namespace {scope.namespace.name!r} already holds {count} {what}, its limit; "
            f"remove some first (the server's limit is set by LAKESHORE_MAX_ROWS / "
            f"LAKESHORE_MAX_SECRETS)",
        )


def check_kwargs_size(scope: Scope, kwargs: Any, field: str = "kwargs") -> None:
    """413 when ``kwargs`` serialises to more than the namespace's limit."""
    import json

    size = len(json.dumps(kwargs, separators=(",", ":")).encode())
    limit = limits_of(scope).max_kwargs_bytes
    if size > limit:
        raise RegistryError(
            413,
            "payload_too_large",
            f"{field} is {size} bytes; a namespace's rows hold at most {limit} bytes of "
            f"{field} each (LAKESHORE_MAX_KWARGS_BYTES)",
        )
