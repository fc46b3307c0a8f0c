"""Registry operations over a SQLAlchemy session: validation, scoping, soft delete.

Every function raises :class:`RegistryError` (status, code, sentence) for the route
layer to turn into JSON; none of them ever puts a secret value in an error.

Scoping (the spec's "Namespace and org scoping"):

* a namespace with an ``orgId``: listings, name lookups and duplicate-name checks
  span every namespace of the org;
* a namespace without one: the *listing* is unscoped (every provider on the
  control plane); lookups and duplicate checks stay inside the namespace, which is
  what the ``(namespace, name)`` unique index guards.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..db import utcnow
from ..models import Namespace
from ..names import NAME_MAX
from . import modes as mode_fields
from . import tombstone
from .check import CheckReport, check_provider
from .crypto import SecretBox, SecretDecryptError
from .kwargs import apply_patch, secret_refs
from .launch import Launcher, scrub, secret_strings
from .launchers import (
    DISPATCHES,
    LAUNCHERS,
    NAME_RULE,
    SERVER_LAUNCHABLE,
    default_dispatch,
    valid_name,
)
from .merge import LaunchSpec, merge_launch
from .models import Mode, Provider, Secret
from .secret_values import (
    SECRET_KINDS,
    SECRET_NAME_RE,
    SECRET_NAME_RULE,
    SecretValueError,
    UnknownSecret,
    expand,
    resolve_markers,
    validate_value,
)


class RegistryError(Exception):
    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail


def _unprocessable(detail: str) -> RegistryError:
    return RegistryError(422, "validation_error", detail)


@dataclass(frozen=True)
class Scope:
    """Who is asking about what: the URL's namespace and the ids its org spans."""

    namespace: Namespace
    org_ids: tuple[int, ...]

    @property
    def has_org(self) -> bool:
        return self.namespace.org_id is not None

    @property
    def lookup_ids(self) -> tuple[int, ...]:
        return self.org_ids if self.has_org else (self.namespace.id,)


def _iso(dt: datetime | None) -> str | None:
    return tombstone.iso(dt) if dt is not None else None


def _ns_names(session: Session, ids: Sequence[int]) -> dict[int, str]:
    rows = session.execute(select(Namespace.id, Namespace.name).where(Namespace.id.in_(ids)))
    return {i: n for i, n in rows}


# --- providers ---------------------------------------------------------------


def provider_wire(row: Provider, namespace_name: str) -> dict[str, Any]:
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
        "deletedAt": _iso(row.deleted_at),
        "createdAt": _iso(row.created_at),
        "updatedAt": _iso(row.updated_at),
    }


def providers_wire(session: Session, rows: Sequence[Provider]) -> list[dict[str, Any]]:
    names = _ns_names(session, sorted({r.namespace_id for r in rows}))
    return [provider_wire(r, names.get(r.namespace_id, "?")) for r in rows]


def _check_name(name: Any, what: str = "provider") -> str:
    if not isinstance(name, str) or not valid_name(name) or len(name) > NAME_MAX:
        raise _unprocessable(
            f"{what} name {name!r} is invalid: names match {NAME_RULE} (at most {NAME_MAX} characters)"
        )
    return name


def _check_launcher(value: Any) -> str:
    if value not in LAUNCHERS:
        hint = ""
        if isinstance(value, str):
            for known in LAUNCHERS:
                if known.lower() == value.lower():
                    hint = f" (did you mean {known!r}? launchers are case-sensitive)"
        raise _unprocessable(f"launcher {value!r} is not one of {', '.join(LAUNCHERS)}{hint}")
    return str(value)


def _check_dispatch(value: Any) -> str | None:
    if value is None:
        return None
    if value not in DISPATCHES:
        raise _unprocessable(f"dispatch {value!r} is not one of {', '.join(DISPATCHES)}")
    return str(value)


def _check_kwargs(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _unprocessable(f"kwargs must be an object, not {type(value).__name__}")
    return value


def _check_tunnel(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 255:
        raise _unprocessable('tunnel must be a string ("" clears it)')
    return value


def _check_identity(value: Any) -> str | None:
    import re

    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", value):
        raise _unprocessable("identity must be a string of letters, digits, '_', '.', '-' (≤64)")
    return value


def _check_markers(session: Session, namespace_id: int, kwargs: Mapping[str, Any]) -> None:
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
        raise _unprocessable(
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


def create_provider(session: Session, scope: Scope, body: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(
        set(body) - {"name", "launcher", "kwargs", "dispatch", "tunnel", "hidden", "identity"}
    )
    if unknown:
        raise _unprocessable(
            f"unknown field(s) {', '.join(unknown)}; the body is {{name, launcher, kwargs, dispatch?}}"
        )
    name = _check_name(body.get("name"))
    launcher = _check_launcher(body.get("launcher"))
    kwargs = _check_kwargs(body.get("kwargs"))
    dispatch = _check_dispatch(body.get("dispatch"))
    tunnel = _check_tunnel(body.get("tunnel"))
    hidden = body.get("hidden", False)
    if not isinstance(hidden, bool):
        raise _unprocessable("hidden must be true or false")
    identity = _check_identity(body.get("identity"))
    existing = _active(session, scope.lookup_ids, name)
    if existing is not None:
        where = "this org" if scope.has_org else "this namespace"
        raise RegistryError(
            409,
            "conflict",
            f"provider {name!r} already exists in {where}; change it with: "
            f"lakeshore providers update {name} --kwarg KEY=VALUE",
        )
    _check_markers(session, scope.namespace.id, kwargs)
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
    _commit(session, f"provider {name!r} already exists")
    return providers_wire(session, [row])[0]


def update_provider(
    session: Session, scope: Scope, name: str, body: Mapping[str, Any]
) -> dict[str, Any]:
    if "launcher" in body:
        raise _unprocessable(
            f"launcher is immutable; to change it remove and re-add: lakeshore providers remove {name} "
            f"&& lakeshore providers add {name} --launcher <L> ..."
        )
    unknown = sorted(
        set(body) - {"kwargs", "kwargsPatch", "dispatch", "tunnel", "hidden", "identity"}
    )
    if unknown:
        raise _unprocessable(
            f"unknown field(s) {', '.join(unknown)}; PATCH takes kwargs, kwargsPatch, dispatch, "
            "tunnel, hidden, identity"
        )
    row = get_provider_row(session, scope, name)
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
    config = copy.deepcopy(row.config or {})
    kwargs = dict(config.get("kwargs") or {})
    if "kwargs" in body:
        kwargs = _check_kwargs(body["kwargs"])
    if "kwargsPatch" in body:
        patch = body["kwargsPatch"]
        if not isinstance(patch, dict):
            raise _unprocessable("kwargsPatch must be an object (null values delete keys)")
        kwargs = apply_patch(kwargs, patch)
    if "dispatch" in body:
        dispatch = _check_dispatch(body["dispatch"])
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
            raise _unprocessable("hidden must be true or false")
        row.hidden = body["hidden"]
    _check_markers(session, row.namespace_id, kwargs)
    config["kwargs"] = kwargs
    row.config = config
    row.updated_at = utcnow()
    _commit(session, f"provider {name!r} changed concurrently")
    return providers_wire(session, [row])[0]


def delete_provider(session: Session, scope: Scope, name: str) -> dict[str, Any]:
    row = get_provider_row(session, scope, name)
    when = utcnow()
    row.deleted_at = when
    row.name = tombstone.tombstone(name, tombstone.iso(when))
    row.updated_at = when
    _commit(session, f"provider {name!r} changed concurrently")
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
    row.name = name
    row.deleted_at = None
    row.updated_at = utcnow()
    _commit(session, f"provider {name!r} exists")
    return providers_wire(session, [row])[0]


def _commit(session: Session, conflict: str) -> None:
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise RegistryError(409, "conflict", conflict) from None


# --- secrets -----------------------------------------------------------------


def secret_wire(row: Secret, namespace_name: str) -> dict[str, Any]:
    return {
        "name": row.name,
        "namespace": namespace_name,
        "kind": row.kind,
        "createdAt": _iso(row.created_at),
        "updatedAt": _iso(row.updated_at),
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
        raise _unprocessable(
            f"unknown field(s) {', '.join(unknown)}; the body is {{name, kind?, value}}"
        )
    name = name if name is not None else body.get("name")
    if not isinstance(name, str) or not SECRET_NAME_RE.match(name) or len(name) > 255:
        raise _unprocessable(f"secret name {name!r} is invalid: names match {SECRET_NAME_RULE}")
    kind = body.get("kind") or "generic"
    value = body.get("value")
    if not isinstance(value, str):
        raise _unprocessable("value must be a string")
    if kind not in SECRET_KINDS:
        raise _unprocessable(f"kind {kind!r} is not one of {', '.join(SECRET_KINDS)}")
    try:
        validate_value(kind, value)
    except SecretValueError as exc:
        raise _unprocessable(str(exc)) from None
    row = session.scalar(
        select(Secret).where(Secret.namespace_id == scope.namespace.id, Secret.name == name)
    )
    ciphertext = box.encrypt(value, namespace=scope.namespace.name, name=name)
    created = row is None
    if row is not None and not replace:
        raise RegistryError(
            409,
            "conflict",
            f"secret {name!r} already exists; replace it with: lakeshore secrets add {name} --replace ...",
        )
    if row is None:
        row = Secret(namespace_id=scope.namespace.id, name=name, kind=kind, ciphertext=ciphertext)
        session.add(row)
    else:
        row.kind = kind
        row.ciphertext = ciphertext
        row.updated_at = utcnow()
    _commit(session, f"secret {name!r} already exists")
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


def _secret_lookup(session: Session, box: SecretBox, namespace_id: int, namespace_name: str):  # type: ignore[no-untyped-def]
    def lookup(name: str) -> tuple[str, str] | None:
        row = session.scalar(
            select(Secret).where(Secret.namespace_id == namespace_id, Secret.name == name)
        )
        if row is None:
            return None
        return row.kind, box.decrypt(row.ciphertext, namespace=namespace_name, name=name)

    return lookup


# --- modes -------------------------------------------------------------------

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
        raise _unprocessable(str(exc)) from None
    for key in MODE_COLUMNS:
        setattr(row, key, stored.get(key))


def list_modes(session: Session, scope: Scope) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(Mode).where(Mode.namespace_id == scope.namespace.id).order_by(Mode.name)
    ).all()
    return [mode_wire(r, scope.namespace.name) for r in rows]


def get_mode(session: Session, scope: Scope, name: str) -> dict[str, Any]:
    return mode_wire(_mode_row(session, scope, name), scope.namespace.name)


def create_mode(session: Session, scope: Scope, body: Mapping[str, Any]) -> dict[str, Any]:
    name = _check_name(body.get("name"), "mode")
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
    row = Mode(namespace_id=scope.namespace.id, name=name)
    _store_mode(row, fields)
    session.add(row)
    _commit(session, f"mode {name!r} already exists")
    return mode_wire(row, scope.namespace.name)


def update_mode(
    session: Session, scope: Scope, name: str, patch: Mapping[str, Any]
) -> dict[str, Any]:
    if "name" in patch and patch["name"] != name:
        raise _unprocessable("a mode cannot be renamed; add a new one and remove this one")
    row = _mode_row(session, scope, name)
    current = mode_wire(row, scope.namespace.name)
    current.pop("name")
    current.pop("namespace")
    fields = apply_patch(
        current, {k: v for k, v in patch.items() if k not in ("name", "namespace")}
    )
    _store_mode(row, fields)
    row.updated_at = utcnow()
    _commit(session, f"mode {name!r} changed concurrently")
    return mode_wire(row, scope.namespace.name)


def delete_mode(session: Session, scope: Scope, name: str) -> dict[str, Any]:
    row = _mode_row(session, scope, name)
    wire = mode_wire(row, scope.namespace.name)
    session.delete(row)
    session.commit()
    return wire


# --- launch ------------------------------------------------------------------


def launch_run_config(session: Session, scope: Scope, body: Mapping[str, Any]) -> dict[str, Any]:
    """The RunConfig a preview/launch body names: a stored mode, a RunConfig, or a
    mode with a RunConfig layered on top."""
    unknown = sorted(set(body) - {"mode", "runConfig", "provider"})
    if unknown:
        raise _unprocessable(
            f"unknown field(s) {', '.join(unknown)}; the body is {{mode?, runConfig?, provider?}}"
        )
    run: dict[str, Any] = {}
    if body.get("mode") is not None:
        if not isinstance(body["mode"], str):
            raise _unprocessable("mode must be a mode name")
        run = get_mode(session, scope, body["mode"])
        run.pop("name", None)
        run.pop("namespace", None)
    extra = body.get("runConfig")
    if extra is not None:
        if not isinstance(extra, dict):
            raise _unprocessable("runConfig must be an object")
        run = apply_patch(run, extra)
    if body.get("provider") is not None:
        run["provider"] = body["provider"]
    if not run.get("provider"):
        raise _unprocessable(
            "the RunConfig names no provider (set provider in the mode or runConfig)"
        )
    if not isinstance(run["provider"], str):
        raise _unprocessable("provider must be a provider name")
    return run


def preview_launch(session: Session, scope: Scope, body: Mapping[str, Any]) -> dict[str, Any]:
    """Merged launcher kwargs with secret markers left as markers (safe on the wire)."""
    spec, row = _merge_for(session, scope, body)
    _check_markers(session, row.namespace_id, spec.kwargs)
    wire = spec.to_wire()
    wire["serverLaunch"] = spec.launcher in SERVER_LAUNCHABLE
    return wire


def _merge_for(
    session: Session, scope: Scope, body: Mapping[str, Any]
) -> tuple[LaunchSpec, Provider]:
    run = launch_run_config(session, scope, body)
    row = get_provider_row(session, scope, run["provider"])
    names = _ns_names(session, [row.namespace_id])
    config = row.config or {}
    spec = merge_launch(
        provider_name=tombstone.strip(row.name),
        launcher=row.kind,
        provider_kwargs=config.get("kwargs") or {},
        run_config=run,
        namespace=names.get(row.namespace_id, scope.namespace.name),
        dispatch=config.get("dispatch"),
    )
    return spec, row


def resolve_launch(
    session: Session,
    scope: Scope,
    box: SecretBox,
    body: Mapping[str, Any],
    *,
    plaintexts: list[str] | None = None,
) -> LaunchSpec:
    """The launch handler's merge with secrets decrypted in memory. In-process only:
    never return its result from a route, log it, or put it in an error.
    ``plaintexts`` (when given) collects every decrypted value, for scrubbing."""
    spec, row = _merge_for(session, scope, body)
    ns_name = spec.namespace
    base_lookup = _secret_lookup(session, box, row.namespace_id, ns_name)

    def lookup(name: str) -> tuple[str, str] | None:
        found = base_lookup(name)
        if found is not None and plaintexts is not None:
            plaintexts.append(found[1])
            plaintexts.extend(secret_strings(expand(*found)))
        return found

    try:
        kwargs = resolve_markers(spec.kwargs, lookup)
    except UnknownSecret as exc:
        raise _unprocessable(str(exc)) from None
    except SecretDecryptError as exc:
        raise RegistryError(500, "secret_undecryptable", str(exc)) from None
    return LaunchSpec(
        provider=spec.provider,
        namespace=spec.namespace,
        launcher=spec.launcher,
        dispatch=spec.dispatch,
        kwargs=kwargs,
        tags=spec.tags,
        run=spec.run,
    )


def check_provider_row(session: Session, scope: Scope, box: SecretBox, name: str) -> CheckReport:
    row = get_provider_row(session, scope, name)
    ns_name = _ns_names(session, [row.namespace_id]).get(row.namespace_id, scope.namespace.name)
    lookup = _secret_lookup(session, box, row.namespace_id, ns_name)

    def probe(secret: str) -> str | None:
        try:
            found = lookup(secret)
        except SecretDecryptError:
            return f"secret {secret!r} exists but does not decrypt with this server's key"
        if found is None:
            return f"secret {secret!r} does not exist in namespace {ns_name!r}"
        kind, plaintext = found
        try:
            validate_value(kind, plaintext)
        except SecretValueError as exc:
            return f"secret {secret!r} ({kind}) is malformed: {exc}"
        return None

    config = row.config or {}
    return check_provider(tombstone.strip(row.name), row.kind, config.get("kwargs") or {}, probe)


def launch(
    session: Session,
    scope: Scope,
    box: SecretBox,
    body: Mapping[str, Any],
    launchers: Mapping[str, Launcher],
) -> dict[str, Any]:
    """Merge, check the launcher may launch server-side, resolve secrets in memory,
    call the installed launcher, and return its answer scrubbed of secret values."""
    spec, _row = _merge_for(session, scope, body)
    if spec.launcher not in SERVER_LAUNCHABLE:
        why = (
            "SSH has no server-side launch route; the CLI drives SSH directly"
            if spec.launcher == "SSH"
            else "SLURM launch is a stub; the sbatch submit path is not built yet"
        )
        raise _unprocessable(
            f"provider {spec.provider!r} uses {spec.launcher}: {why}. "
            f"The launch routes accept only {', '.join(SERVER_LAUNCHABLE)}"
        )
    fn = launchers.get(spec.launcher)
    if fn is None:
        raise RegistryError(
            501,
            "not_implemented",
            f"no {spec.launcher} launcher is installed on this control plane; nothing was launched. "
            f"See what would be sent with: POST .../launch/preview",
        )
    plaintexts: list[str] = []
    resolved = resolve_launch(session, scope, box, body, plaintexts=plaintexts)
    try:
        result = dict(fn(resolved))
    except Exception as exc:
        message = scrub(f"{type(exc).__name__}: {exc}", plaintexts)
        raise RegistryError(
            502, "launch_failed", f"the {spec.launcher} launcher failed: {message}"
        ) from None
    finally:
        del resolved
    out = spec.to_wire()
    out["result"] = scrub(result, plaintexts)
    return out
