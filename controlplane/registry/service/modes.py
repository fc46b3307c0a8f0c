"""Modes: stored RunConfigs, merge-patched field by field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...db import utcnow
from ...rowlock import lock_row
from .. import modes as mode_fields
from ..kwargs import apply_patch
from ..models import Mode
from .common import (
    RegistryError,
    Scope,
    answerable,
    check_kwargs_size,
    check_name,
    check_room,
    commit_or_conflict,
    limits_of,
    unprocessable,
)

MODE_COLUMNS = mode_fields.RECOGNISED


def mode_wire(row: Mode, namespace_name: str) -> dict[str, Any]:
    stored = {k: getattr(row, k) for k in MODE_COLUMNS}
    if stored.get("timeout_s") is not None and float(stored["timeout_s"]).is_integer():
        stored["timeout_s"] = int(stored["timeout_s"])
    return {"name": row.name, **mode_fields.from_storage(stored), "namespace": namespace_name}


def _mode_row(session: Session, scope: Scope, name: str) -> Mode:
    row = session.scalar(
        select(Mode).where(Mode.namespace_id == scope.namespace.id, Mode.name == name)
    )
    if row is None:
        raise RegistryError(404, "not_found", f"no mode named {name!r}; see: lakeshore modes list")
    return row


def _store_mode(row: Mode, fields: Mapping[str, Any]) -> None:
    try:
        stored = mode_fields.to_storage(fields)
    except mode_fields.ModeFieldError as exc:
        raise unprocessable(str(exc)) from None
    for key in MODE_COLUMNS:
        setattr(row, key, stored.get(key))


def list_modes(session: Session, scope: Scope) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(Mode).where(Mode.namespace_id == scope.namespace.id).order_by(Mode.name)
    ).all()
    return [answerable(mode_wire(r, scope.namespace.name)) for r in rows]


def get_mode(session: Session, scope: Scope, name: str) -> dict[str, Any]:
    return answerable(mode_wire(_mode_row(session, scope, name), scope.namespace.name))


def create_mode(session: Session, scope: Scope, body: Mapping[str, Any]) -> dict[str, Any]:
    name = check_name(body.get("name"), "mode")
    if session.scalar(
        select(Mode.id).where(Mode.namespace_id == scope.namespace.id, Mode.name == name)
    ):
        raise RegistryError(
            409,
            "conflict",
            f"mode {name!r} already exists; change it with: lakeshore modes update {name} --field KEY=VALUE",
        )
    fields = {k: v for k, v in body.items() if k not in ("name", "namespace")}
    fields = apply_patch({}, fields)
    check_room(session, scope, Mode, "modes", limits_of(scope).max_rows)
    check_kwargs_size(scope, fields, "the mode")
    row = Mode(namespace_id=scope.namespace.id, name=name)
    _store_mode(row, fields)
    session.add(row)
    commit_or_conflict(session, f"mode {name!r} already exists")
    return answerable(mode_wire(row, scope.namespace.name))


def update_mode(
    session: Session, scope: Scope, name: str, patch: Mapping[str, Any]
) -> dict[str, Any]:
    if "name" in patch and patch["name"] != name:
        raise unprocessable("a mode cannot be renamed; add a new one and remove this one")
    row = _mode_row(session, scope, name)
    if not lock_row(session, row):  # read again under the lock: no patch is lost
        session.rollback()
        raise RegistryError(409, "conflict", f"mode {name!r} was removed meanwhile")
    current = mode_wire(row, scope.namespace.name)
    current.pop("name")
    current.pop("namespace")
    fields = apply_patch(
        current, {k: v for k, v in patch.items() if k not in ("name", "namespace")}
    )
    check_kwargs_size(scope, fields, "the mode")  # one limit on every write path
    _store_mode(row, fields)
    row.updated_at = utcnow()
    commit_or_conflict(session, f"mode {name!r} changed concurrently")
    return answerable(mode_wire(row, scope.namespace.name))


def delete_mode(session: Session, scope: Scope, name: str) -> dict[str, Any]:
    row = _mode_row(session, scope, name)
    wire = answerable(mode_wire(row, scope.namespace.name))
    session.delete(row)
    session.commit()
    return wire
