"""Secrets: encrypted on the way in, never returned; deletion guarded by the
providers that reference them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...db import utcnow
from .. import tombstone
from ..crypto import SecretBox, require_current
from ..kwargs import secret_refs
from ..models import Provider, Secret
from ..secret_values import (
    SECRET_KINDS,
    SECRET_NAME_RE,
    SECRET_NAME_RULE,
    SecretValueError,
    validate_value,
)
from .common import (
    RegistryError,
    Scope,
    check_room,
    commit_or_conflict,
    iso,
    limits_of,
    unprocessable,
)


def secret_wire(row: Secret, namespace_name: str) -> dict[str, Any]:
    return {
        "name": row.name,
        "namespace": namespace_name,
        "kind": row.kind,
        "createdAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
    }


def list_secrets(session: Session, scope: Scope) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(Secret).where(Secret.namespace_id == scope.namespace.id).order_by(Secret.name)
    ).all()
    return [secret_wire(r, scope.namespace.name) for r in rows]


def put_secret(
    session: Session,
    scope: Scope,
    box: SecretBox,
    body: Mapping[str, Any],
    *,
    name: str | None = None,
    replace: bool = False,
) -> tuple[dict[str, Any], bool]:
    """Create (or with ``replace`` overwrite) a secret. Returns (row, created)."""
    unknown = sorted(set(body) - {"name", "kind", "value"})
    if unknown:
        raise unprocessable(
            f"unknown field(s) {', '.join(unknown)}; the body is {{name, kind?, value}}"
        )
    name = name if name is not None else body.get("name")
    if not isinstance(name, str) or not SECRET_NAME_RE.match(name) or len(name) > 255:
        raise unprocessable(f"secret name {name!r} is invalid: names match {SECRET_NAME_RULE}")
    kind = body.get("kind") or "generic"
    value = body.get("value")
    if not isinstance(value, str):
        raise unprocessable("value must be a string")
    if kind not in SECRET_KINDS:
        raise unprocessable(f"kind {kind!r} is not one of {', '.join(SECRET_KINDS)}")
    try:
        validate_value(kind, value)
    except SecretValueError as exc:
        raise unprocessable(str(exc)) from None
    row = session.scalar(
        select(Secret).where(Secret.namespace_id == scope.namespace.id, Secret.name == name)
    )
    require_current(session, box)  # a key rotated meanwhile: refused, nothing written
    ciphertext = box.encrypt(value, namespace=scope.namespace.name, name=name)
    created = row is None
    if row is not None and not replace:
        raise RegistryError(
            409,
            "conflict",
            f"secret {name!r} already exists; replace it with: lakeshore secrets add {name} --replace ...",
        )
    if row is None:
        check_room(session, scope, Secret, "secrets", limits_of(scope).max_secrets)
        row = Secret(
            namespace_id=scope.namespace.id,
            name=name,
            kind=kind,
            ciphertext=ciphertext,
            key_id=box.key_id,
        )
        session.add(row)
    else:
        row.kind = kind
        row.ciphertext = ciphertext
        row.key_id = box.key_id
        row.updated_at = utcnow()
    commit_or_conflict(session, f"secret {name!r} already exists")
    return secret_wire(row, scope.namespace.name), created


def delete_secret(
    session: Session, scope: Scope, name: str, *, force: bool = False
) -> dict[str, Any]:
    row = session.scalar(
        select(Secret).where(Secret.namespace_id == scope.namespace.id, Secret.name == name)
    )
    if row is None:
        raise RegistryError(404, "not_found", f"no secret named {name!r}")
    if not force:
        users = [
            tombstone.strip(p.name)
            for p in session.scalars(
                select(Provider).where(
                    Provider.namespace_id == scope.namespace.id, Provider.deleted_at.is_(None)
                )
            )
            if any(n == name for _, n in secret_refs((p.config or {}).get("kwargs") or {}))
        ]
        if users:
            raise RegistryError(
                409,
                "conflict",
                f"secret {name!r} is referenced by provider(s) {', '.join(sorted(users))}; "
                f"update them first, or remove anyway with --force",
            )
    wire = secret_wire(row, scope.namespace.name)
    session.delete(row)
    session.commit()
    return wire


def secret_lookup(session: Session, box: SecretBox, namespace_id: int, namespace_name: str):  # type: ignore[no-untyped-def]
    def lookup(name: str) -> tuple[str, str] | None:
        row = session.scalar(
            select(Secret).where(Secret.namespace_id == namespace_id, Secret.name == name)
        )
        if row is None:
            return None
        return row.kind, box.decrypt(
            row.ciphertext, namespace=namespace_name, name=name, key_id=row.key_id
        )

    return lookup
