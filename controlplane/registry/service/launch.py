"""The launch-time merge: preview (markers kept), in-process resolution (secrets
decrypted in memory) and the offline provider check. The launch itself is
``controlplane.launch.service``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from .. import tombstone
from ..check import CheckReport, check_provider
from ..crypto import SecretBox, SecretDecryptError
from ..kwargs import apply_patch
from ..launch import secret_strings
from ..launchers import (
    SERVER_LAUNCHABLE,
)
from ..merge import LaunchSpec, merge_launch
from ..models import Provider
from ..secret_values import (
    SecretValueError,
    UnknownSecret,
    expand,
    resolve_markers,
    validate_value,
)
from .common import RegistryError, Scope, ns_names, unprocessable
from .modes import get_mode
from .providers import check_markers, check_server_files, get_provider_row
from .secrets import secret_lookup


def launch_run_config(session: Session, scope: Scope, body: Mapping[str, Any]) -> dict[str, Any]:
    """The RunConfig a preview/launch body names: a stored mode, a RunConfig, or a
    mode with a RunConfig layered on top."""
    unknown = sorted(set(body) - {"mode", "runConfig", "provider"})
    if unknown:
        raise unprocessable(
            f"unknown field(s) {', '.join(unknown)}; the body is {{mode?, runConfig?, provider?}}"
        )
    run: dict[str, Any] = {}
    if body.get("mode") is not None:
        if not isinstance(body["mode"], str):
            raise unprocessable("mode must be a mode name")
        run = get_mode(session, scope, body["mode"])
        run.pop("name", None)
        run.pop("namespace", None)
    extra = body.get("runConfig")
    if extra is not None:
        if not isinstance(extra, dict):
            raise unprocessable("runConfig must be an object")
        run = apply_patch(run, extra)
    if body.get("provider") is not None:
        run["provider"] = body["provider"]
    if not run.get("provider"):
        raise unprocessable(
            "the RunConfig names no provider (set provider in the mode or runConfig)"
        )
    if not isinstance(run["provider"], str):
        raise unprocessable("provider must be a provider name")
    return run


def preview_launch(session: Session, scope: Scope, body: Mapping[str, Any]) -> dict[str, Any]:
    """Merged launcher kwargs with secret markers left as markers (safe on the wire)."""
    spec, row = _merge_for(session, scope, body)
    check_markers(session, row.namespace_id, spec.kwargs)
    wire = spec.to_wire()
    wire["serverLaunch"] = spec.launcher in SERVER_LAUNCHABLE
    return wire


def _merge_for(
    session: Session, scope: Scope, body: Mapping[str, Any]
) -> tuple[LaunchSpec, Provider]:
    run = launch_run_config(session, scope, body)
    row = get_provider_row(session, scope, run["provider"])
    names = ns_names(session, [row.namespace_id])
    config = row.config or {}
    spec = merge_launch(
        provider_name=tombstone.strip(row.name),
        launcher=row.kind,
        provider_kwargs=config.get("kwargs") or {},
        run_config=run,
        namespace=names.get(row.namespace_id, scope.namespace.name),
        dispatch=config.get("dispatch"),
    )
    check_server_files(spec.launcher, spec.kwargs)
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
    base_lookup = secret_lookup(session, box, row.namespace_id, ns_name)

    def lookup(name: str) -> tuple[str, str] | None:
        found = base_lookup(name)
        if found is not None and plaintexts is not None:
            plaintexts.append(found[1])
            plaintexts.extend(secret_strings(expand(*found)))
        return found

    try:
        kwargs = resolve_markers(spec.kwargs, lookup)
    except UnknownSecret as exc:
        raise unprocessable(str(exc)) from None
    except SecretDecryptError as exc:
        raise RegistryError(500, "secret_undecryptable", str(exc)) from None
    check_server_files(spec.launcher, kwargs)  # what a secret holds, too
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
    ns_name = ns_names(session, [row.namespace_id]).get(row.namespace_id, scope.namespace.name)
    lookup = secret_lookup(session, box, row.namespace_id, ns_name)

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
