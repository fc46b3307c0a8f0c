"""Provider rows: create, read, list, patch, soft delete and restore."""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...db import UNREADABLE, utcnow
from ...rowlock import lock_row
from .. import tombstone
from ..kwargs import apply_patch, secret_refs
from ..launchers import (
    DISPATCHES,
    HYBRID_LAUNCHERS,
    LAUNCHERS,
    default_dispatch,
)
from ..models import Provider, Secret
from ..server_files import refusal, server_file_fields
from .common import (
    RegistryError,
    Scope,
    answerable,
    check_kwargs_size,
    check_name,
    check_room,
    check_writable,
    commit_or_conflict,
    iso,
    limits_of,
    ns_names,
    unprocessable,
)
from .observed import observed_wire

log = logging.getLogger("lakeshore.registry")


_IDENTITY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def provider_wire(row: Provider, namespace_name: str) -> dict[str, Any]:
    if isinstance(row.config, dict) and UNREADABLE in row.config:
        raise ValueError(f"stored config unreadable ({row.config[UNREADABLE]})")
    config = copy.deepcopy(row.config or {})
    kwargs = config.get("kwargs") or {}
    ident = {"identity": row.identity} if row.identity else {}
    return {
        **ident,
        "name": tombstone.strip(row.name),
        "namespace": namespace_name,
        "launcher": row.kind,
        "kwargs": kwargs,
        "dispatch": config.get("dispatch") or default_dispatch(row.kind),
        "tunnel": config.get("tunnel") or None,
        "hidden": bool(row.hidden),
        "deletedAt": iso(row.deleted_at),
        "createdAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
        "observed": observed_wire(row),
    }


def providers_wire(session: Session, rows: Sequence[Provider]) -> list[dict[str, Any]]:
    names = ns_names(session, sorted({r.namespace_id for r in rows}))
    return [_readable_wire(r, names.get(r.namespace_id, "?")) for r in rows]


def _readable_wire(row: Provider, namespace_name: str) -> dict[str, Any]:
    """The row's wire form; a row that cannot be read (a stored value no reader can
    copy) comes out as its name with ``unreadable`` saying why, so it never breaks a
    listing of the others and can still be removed or replaced by name."""
    try:
        return answerable(provider_wire(row, namespace_name))
    except (RecursionError, TypeError, ValueError) as exc:
        log.warning("provider row %s is unreadable: %s", row.id, type(exc).__name__)
        return {
            "name": tombstone.strip(row.name),
            "namespace": namespace_name,
            "launcher": row.kind,
            "kwargs": {},
            "dispatch": default_dispatch(row.kind),
            "tunnel": None,
            "hidden": bool(row.hidden),
            "deletedAt": iso(row.deleted_at),
            "createdAt": iso(row.created_at),
            "updatedAt": iso(row.updated_at),
            "unreadable": f"its stored kwargs cannot be read ({type(exc).__name__}); "
            f"replace them (PATCH kwargs) or remove the provider",
        }


def _check_launcher(value: Any) -> str:
    if value not in LAUNCHERS:
        hint = ""
        if isinstance(value, str):
            for known in LAUNCHERS:
                if known.lower() == value.lower():
                    hint = f" (did you mean {known!r}? launchers are case-sensitive)"
        raise unprocessable(f"launcher {value!r} is not one of {', '.join(LAUNCHERS)}{hint}")
    return str(value)


def _check_dispatch(value: Any, launcher: str | None = None) -> str | None:
    if value is None:
        return None
    if value not in DISPATCHES:
        raise unprocessable(f"dispatch {value!r} is not one of {', '.join(DISPATCHES)}")
    if value == "hybrid" and launcher is not None and launcher not in HYBRID_LAUNCHERS:
        raise unprocessable(
            f"dispatch 'hybrid' is for {' and '.join(HYBRID_LAUNCHERS)} providers, not {launcher}"
        )
    return str(value)


def _check_kwargs(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise unprocessable(f"kwargs must be an object, not {type(value).__name__}")
    return value


def _check_tunnel(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 255:
        raise unprocessable('tunnel must be a string ("" clears it)')
    return value


def check_server_files(launcher: str, kwargs: Mapping[str, Any]) -> None:
    """422 naming every kwarg that would point a launcher at a file on the server."""
    fields = server_file_fields(launcher, kwargs)
    if fields:
        raise unprocessable(refusal(fields))


def check_markers(session: Session, namespace_id: int, kwargs: Mapping[str, Any]) -> None:
    refs = secret_refs(kwargs)
    if not refs:
        return
    wanted = sorted({name for _, name in refs})
    have = set(
        session.scalars(
            select(Secret.name).where(Secret.namespace_id == namespace_id, Secret.name.in_(wanted))
        )
    )
    missing = [(path, name) for path, name in refs if name not in have]
    if missing:
        listed = "; ".join(f"kwargs.{p} -> {n!r}" for p, n in missing)
        raise unprocessable(
            f"secret marker(s) name secrets that do not exist in this namespace: {listed}. "
            f"Add them first: lakeshore secrets add <name> --value-file <file>"
        )


def _active(session: Session, ids: Sequence[int], name: str) -> Provider | None:
    return session.scalar(
        select(Provider).where(
            Provider.namespace_id.in_(ids), Provider.name == name, Provider.deleted_at.is_(None)
        )
    )


def _tombstones(session: Session, ids: Sequence[int], name: str) -> list[Provider]:
    rows = session.scalars(
        select(Provider).where(
            Provider.namespace_id.in_(ids),
            Provider.deleted_at.is_not(None),
            Provider.name.startswith(f"{name} [deleted ", autoescape=True),
        )
    ).all()
    rows = [r for r in rows if tombstone.strip(r.name) == name]
    return sorted(rows, key=lambda r: r.deleted_at or utcnow(), reverse=True)


def list_providers(
    session: Session, scope: Scope, *, hidden: bool = False, deleted: bool = False
) -> list[dict[str, Any]]:
    query = select(Provider)
    if scope.has_org:
        query = query.where(Provider.namespace_id.in_(scope.org_ids))
    elif not scope.unscoped:
        query = query.where(Provider.namespace_id == scope.namespace.id)
    if not hidden:
        query = query.where(Provider.hidden.is_(False))
    if not deleted:
        query = query.where(Provider.deleted_at.is_(None))
    rows = session.scalars(query.order_by(Provider.name, Provider.id)).all()
    return providers_wire(session, rows)


def get_provider_row(
    session: Session, scope: Scope, name: str, *, allow_deleted: bool = False
) -> Provider:
    row = _active(session, scope.lookup_ids, name)
    if row is not None:
        return row
    gone = _tombstones(session, scope.lookup_ids, name)
    if gone and allow_deleted:
        return gone[0]
    if gone:
        raise RegistryError(
            404,
            "not_found",
            f"provider {name!r} is deleted; restore it with: lakeshore providers restore {name}",
        )
    raise RegistryError(
        404, "not_found", f"no provider named {name!r}; see: lakeshore providers list --all"
    )


def get_provider(session: Session, scope: Scope, name: str) -> dict[str, Any]:
    row = get_provider_row(session, scope, name, allow_deleted=True)
    return providers_wire(session, [row])[0]


def _check_identity(value: Any) -> str | None:
    """The lifecycle provider's identity a row belongs to (provider.json ``id``)."""
    if value is None:
        return None
    if not isinstance(value, str) or not _IDENTITY.fullmatch(value):
        raise unprocessable("identity must be a string of letters, digits, '_', '.', '-' (≤64)")
    return value


def create_provider(session: Session, scope: Scope, body: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(
        set(body) - {"name", "launcher", "kwargs", "dispatch", "tunnel", "hidden", "identity"}
    )
    if unknown:
        raise unprocessable(
            f"unknown field(s) {', '.join(unknown)}; the body is {{name, launcher, kwargs, dispatch?}}"
        )
    name = check_name(body.get("name"))
    launcher = _check_launcher(body.get("launcher"))
    kwargs = _check_kwargs(body.get("kwargs"))
    dispatch = _check_dispatch(body.get("dispatch"), launcher)
    tunnel = _check_tunnel(body.get("tunnel"))
    hidden = body.get("hidden", False)
    if not isinstance(hidden, bool):
        raise unprocessable("hidden must be true or false")
    identity = _check_identity(body.get("identity"))
    check_kwargs_size(scope, kwargs)
    check_server_files(launcher, kwargs)
    existing = _active(session, scope.lookup_ids, name)
    if existing is not None:
        where = "this org" if scope.has_org else "this namespace"
        raise RegistryError(
            409,
            "conflict",
            f"provider {name!r} already exists in {where}; change it with: "
            f"lakeshore providers update {name} --kwarg KEY=VALUE",
        )
    check_markers(session, scope.namespace.id, kwargs)
    check_room(session, scope, Provider, "providers", limits_of(scope).max_rows)
    config: dict[str, Any] = {"kwargs": kwargs}
    if dispatch is not None:
        config["dispatch"] = dispatch
    if tunnel is not None:
        config["tunnel"] = tunnel
    row = Provider(
        namespace_id=scope.namespace.id,
        name=name,
        kind=launcher,
        config=config,
        hidden=hidden,
        identity=identity,
    )
    session.add(row)
    commit_or_conflict(session, f"provider {name!r} already exists")
    return providers_wire(session, [row])[0]


def update_provider(
    session: Session, scope: Scope, name: str, body: Mapping[str, Any]
) -> dict[str, Any]:
    if "launcher" in body:
        raise unprocessable(
            f"launcher is immutable; to change it remove and re-add: lakeshore providers remove {name} "
            f"&& lakeshore providers add {name} --launcher <L> ..."
        )
    unknown = sorted(
        set(body) - {"kwargs", "kwargsPatch", "dispatch", "tunnel", "hidden", "identity"}
    )
    if unknown:
        raise unprocessable(
            f"unknown field(s) {', '.join(unknown)}; PATCH takes kwargs, kwargsPatch, dispatch, "
            "tunnel, hidden, identity"
        )
    row = _locked(session, scope, name)
    if "identity" in body:
        identity = _check_identity(body["identity"])
        if row.identity is not None and identity != row.identity:
            raise RegistryError(
                409,
                "conflict",
                f"provider {name!r} belongs to another provider identity ({row.identity}); "
                "an identity, once set, does not change: pick another name, or remove the "
                f"row first (lakeshore providers remove {name})",
            )
        row.identity = identity
    try:
        if isinstance(row.config, dict) and UNREADABLE in row.config:
            raise RecursionError
        config = copy.deepcopy(row.config or {})
    except RecursionError:  # an unreadable row: a full kwargs replacement repairs it
        if "kwargs" not in body:
            raise unprocessable(
                f"provider {name!r} has unreadable kwargs; replace them whole (PATCH kwargs) "
                f"or remove it: lakeshore providers remove {name}"
            ) from None
        config = {k: v for k, v in (row.config or {}).items() if k not in ("kwargs", UNREADABLE)}
    kwargs = dict(config.get("kwargs") or {})
    if "kwargs" in body:
        kwargs = _check_kwargs(body["kwargs"])
    if "kwargsPatch" in body:
        patch = body["kwargsPatch"]
        if not isinstance(patch, dict):
            raise unprocessable("kwargsPatch must be an object (null values delete keys)")
        kwargs = apply_patch(kwargs, patch)
    if "dispatch" in body:
        dispatch = _check_dispatch(body["dispatch"], row.kind)
        if dispatch is None:
            config.pop("dispatch", None)
        else:
            config["dispatch"] = dispatch
    if "tunnel" in body:
        tunnel = _check_tunnel(body["tunnel"])
        if tunnel is None:
            config.pop("tunnel", None)
        else:
            config["tunnel"] = tunnel
    if "hidden" in body:
        if not isinstance(body["hidden"], bool):
            raise unprocessable("hidden must be true or false")
        row.hidden = body["hidden"]
    check_kwargs_size(scope, kwargs)
    check_server_files(row.kind, kwargs)
    check_markers(session, row.namespace_id, kwargs)
    config["kwargs"] = kwargs
    row.config = config
    row.updated_at = utcnow()
    commit_or_conflict(session, f"provider {name!r} changed concurrently")
    return providers_wire(session, [row])[0]


def _locked(session: Session, scope: Scope, name: str) -> Provider:
    """The live row named ``name``, locked for this transaction and read again (a
    read-modify-write never overwrites a change answered meanwhile)."""
    row = get_provider_row(session, scope, name)
    check_writable(session, scope, row.namespace_id, f"provider {name!r}")
    if not lock_row(session, row) or row.deleted_at is not None:
        session.rollback()
        raise RegistryError(
            409,
            "conflict",
            f"provider {name!r} was removed meanwhile; see: lakeshore providers list --all",
        )
    return row


def delete_provider(session: Session, scope: Scope, name: str) -> dict[str, Any]:
    row = _locked(session, scope, name)
    when = utcnow()
    row.deleted_at = when
    row.name = tombstone.tombstone(name, tombstone.iso(when))
    row.updated_at = when
    commit_or_conflict(session, f"provider {name!r} changed concurrently")
    return providers_wire(session, [row])[0]


def restore_provider(session: Session, scope: Scope, name: str) -> dict[str, Any]:
    if _active(session, scope.lookup_ids, name) is not None:
        raise RegistryError(
            409,
            "conflict",
            f"provider {name!r} exists (not deleted); a deleted copy cannot be restored over it. "
            f"Remove the current one first: lakeshore providers remove {name}",
        )
    gone = _tombstones(session, scope.lookup_ids, name)
    if not gone:
        raise RegistryError(404, "not_found", f"no deleted provider named {name!r}")
    row = gone[0]
    check_writable(session, scope, row.namespace_id, f"provider {name!r}")
    row.name = name
    row.deleted_at = None
    row.updated_at = utcnow()
    commit_or_conflict(session, f"provider {name!r} exists")
    return providers_wire(session, [row])[0]
