"""What a launch is made of: the request's own fields checked (``split_body``), the
launcher module that carries it out (``backend``), and the order it is given
(``to_order``), the provider's own settings resolved by the registry."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

from sqlalchemy.orm import Session

from ..launchers import LauncherUnavailable, load
from ..launchers.order import LaunchOrder
from ..names import is_name
from ..registry import service as registry
from ..registry.crypto import SecretBox
from ..registry.merge import LaunchSpec
from ..server.json_guard import refuse_nul
from . import dispatch

CLIENT_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,48}$")
MAX_COUNT = 20
ORDER_FIELDS = ("count", "clientToken", "queue", "command", "dispatch")


class LaunchError(registry.RegistryError):
    pass


def _bad(detail: str) -> LaunchError:
    return LaunchError(422, "validation_error", detail)


def split_body(body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(the registry's preview body, this request's own fields)``, checked before
    anything is stored: no NUL anywhere (PostgreSQL cannot hold it), a queue name that
    fits its column (else the instances launched could not be recorded)."""
    try:
        refuse_nul(body)
    except ValueError as exc:
        raise _bad(str(exc)) from None
    core = {k: v for k, v in body.items() if k not in ORDER_FIELDS}
    own = {k: body[k] for k in ORDER_FIELDS if k in body}
    count = own.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_COUNT:
        raise _bad(f"count must be a whole number from 1 to {MAX_COUNT}")
    token = own.get("clientToken")
    if token is None:
        token = uuid.uuid4().hex
    if not isinstance(token, str) or not CLIENT_TOKEN.match(token):
        raise _bad("clientToken must be 1-48 characters of A-Z a-z 0-9 _ -")
    queue = own.get("queue")
    if queue is not None and (not isinstance(queue, str) or not is_name(queue)):
        raise _bad("queue must be a queue name (^[a-z0-9][a-z0-9-]*$, at most 63 characters)")
    command = own.get("command")
    if command is not None and not isinstance(command, str):
        raise _bad("command must be a shell command (a string)")
    how = own.get("dispatch")
    if how is not None and how not in (dispatch.DIRECT, dispatch.DAEMON):
        raise _bad("dispatch (for a hybrid provider's launch) must be direct or daemon")
    return core, {
        "count": count,
        "clientToken": token,
        "queue": queue,
        "command": command,
        "dispatch": how,
    }


def _half(preview: dict[str, Any], own: Mapping[str, Any]) -> None:
    """A hybrid provider's launch is direct or daemon (the request's ``dispatch``,
    direct when it names none); another provider's launch cannot pick."""
    how = own.get("dispatch")
    if preview["dispatch"] == dispatch.HYBRID:
        preview["dispatch"] = how or dispatch.DIRECT
    elif how is not None and how != preview["dispatch"]:
        raise _bad(
            f"provider {preview['provider']!r} dispatches {preview['dispatch']!r}; "
            "only a hybrid provider's launch picks direct or daemon"
        )


# -- which function launches ------------------------------------------------------


def backend(state: Any, kind: str) -> Any:
    """The launcher module for ``kind`` (overridable per app for tests:
    ``app.state.launch_backends = {"EC2": module-like}``)."""
    overrides = getattr(state, "launch_backends", None) or {}
    if kind in overrides:
        return overrides[kind]
    try:
        return load(kind)
    except LauncherUnavailable as exc:
        raise LaunchError(501, "not_implemented", f"{exc}; nothing was launched") from None


def _launch_fn(state: Any, kind: str) -> Callable[[LaunchSpec], Mapping[str, Any]]:
    seam = getattr(state, "registry_launchers", None) or {}
    if kind in seam:
        return seam[kind]  # type: ignore[no-any-return]
    return backend(state, kind).launch  # type: ignore[no-any-return]


def to_order(spec: LaunchSpec, **extra: Any) -> LaunchOrder:
    base = {f.name: getattr(spec, f.name) for f in fields(LaunchSpec)}
    base.update(extra)
    return LaunchOrder(**base)


def server_credentials(state: Any) -> bool:
    """Whether the operator lets a launch with no credentials secret use the server's
    own cloud credentials (``Settings.launch_server_credentials``; off by default)."""
    return bool(getattr(getattr(state, "settings", None), "launch_server_credentials", False))


def _identity(session: Session, scope: registry.Scope, provider: str) -> str | None:
    """The provider row's identity (what names its daemons on a host), if it has one."""
    return registry.get_provider_row(session, scope, provider).identity


def _order_for(
    session: Session,
    scope: registry.Scope,
    box: SecretBox,
    provider: str,
    plaintexts: list[str],
    state: Any = None,
) -> LaunchOrder:
    resolved = registry.resolve_launch(
        session, scope, box, {"provider": provider}, plaintexts=plaintexts
    )
    return to_order(
        resolved,
        identity=_identity(session, scope, provider),
        server_credentials=server_credentials(state),
    )
