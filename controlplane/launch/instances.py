"""The instances a control plane launched: their wire form, their live state asked of
each provider (``refresh``), listing them with the orphans, and stopping one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..db import utcnow
from ..launchers.errors import LaunchRejected
from ..registry import service as registry
from ..registry.crypto import SecretBox
from ..registry.launch import scrub
from . import tracking
from .models import Instance
from .orders import LaunchError, _order_for, backend
from .tokens import revoke

GONE = ("terminated", "gone", "cancelled", "completed", "failed", "deleted", "succeeded", "timeout")


def _iso(dt: datetime | None) -> str | None:
    return dt.isoformat().replace("+00:00", "Z") if dt else None


def instance_wire(row: Instance, namespace: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row.instance_id,
        "provider": row.provider_name,
        "launcher": row.launcher,
        "namespace": namespace,
        "state": row.state,
        "queue": row.queue,
        "clientToken": row.client_token,
        "details": row.details or {},
        "createdAt": _iso(row.created_at),
        "startedAt": _iso(row.started_at or row.created_at),
        "terminatedAt": _iso(row.terminated_at),
    }
    reason = (row.details or {}).get("reason")
    if reason:
        out["reason"] = reason
    return out


def rows_for(
    session: Session,
    ns_id: int,
    *,
    provider: str | None = None,
    include_gone: bool = False,
    queue: str | None = None,
) -> list[Instance]:
    q = select(Instance).where(Instance.namespace_id == ns_id)
    if provider:
        q = q.where(Instance.provider_name == provider)
    if queue:
        q = q.where(Instance.queue == queue)
    if not include_gone:
        q = q.where(Instance.terminated_at.is_(None))
    return list(session.scalars(q.order_by(Instance.id)))


def refresh(
    session: Session, scope: registry.Scope, box: SecretBox, state: Any, rows: Sequence[Instance]
) -> dict[str, str]:
    """Ask each provider for the live state of its instances; update the rows.
    Returns ``{provider: error}`` for providers that could not be asked."""
    errors: dict[str, str] = {}
    by_provider: dict[str, list[Instance]] = {}
    for r in rows:
        if r.terminated_at is None:
            by_provider.setdefault(r.provider_name, []).append(r)
    for provider, group in by_provider.items():
        plaintexts: list[str] = []
        try:
            order = _order_for(session, scope, box, provider, plaintexts, state)
            session.commit()  # no connection held while the provider is asked
            live = backend(state, order.launcher).describe(order, [r.instance_id for r in group])
        except Exception as exc:
            detail = exc.detail if isinstance(exc, registry.RegistryError) else str(exc)
            errors[provider] = str(scrub(detail, plaintexts))
            continue
        for r in group:
            session.refresh(r)  # what changed while the provider was asked wins
            if r.terminated_at is not None:
                continue
            seen = live.get(r.instance_id, "gone")
            if isinstance(seen, Mapping):  # a state and the outcome of a direct run
                outcome = {k: v for k, v in seen.items() if k != "state"}
                seen = str(seen.get("state") or "unknown")
                if outcome and (r.details or {}).get("outcome") != outcome:
                    r.details = {**(r.details or {}), "outcome": scrub(outcome, plaintexts)}
            if seen != r.state:
                r.state = seen
            if seen.lower() in GONE and r.terminated_at is None:
                _ended(session, state, r, f"the instance is {seen}")
    session.commit()
    return errors


def _ended(session: Session, state: Any, row: Instance, reason: str) -> None:
    """``row`` is over: terminated now, its token revoked, its workers out of the
    count at once."""
    row.terminated_at = utcnow()
    revoke(session, row.token_id, state)
    tracking.take_out(session, state, row, f"{reason}; the run was lost")


def list_instances(
    session: Session,
    scope: registry.Scope,
    box: SecretBox,
    state: Any,
    *,
    provider: str | None = None,
    include_gone: bool = False,
    live: bool = True,
) -> dict[str, Any]:
    """The instances, and the orphans: live workers whose instance row is terminated
    or missing (listed with ``state: orphan`` until they are gone)."""
    rows = rows_for(session, scope.namespace.id, provider=provider, include_gone=include_gone)
    errors = refresh(session, scope, box, state, rows) if live else {}
    if not include_gone:
        rows = [r for r in rows if r.terminated_at is None]
    ns = scope.namespace.name
    workers = tracking.live_workers(session, state, scope.namespace.id, provider)
    lost = tracking.orphans(session, state, scope.namespace.id, workers)
    return {
        "instances": [instance_wire(r, ns) for r in rows] + [o.wire(ns) for o in lost],
        "errors": errors,
    }


def find(session: Session, ns_id: int, instance_id: str) -> Instance:
    row = session.scalar(  # the live row first, else the latest
        select(Instance)
        .where(Instance.namespace_id == ns_id, Instance.instance_id == instance_id)
        .order_by(Instance.terminated_at.is_(None).desc(), Instance.id.desc())
    )
    if row is None:
        raise LaunchError(
            404, "not_found", f"this control plane launched no instance {instance_id!r}"
        )
    return row


def stop_instance(
    session: Session,
    scope: registry.Scope,
    box: SecretBox,
    state: Any,
    row: Instance,
    *,
    action: str = "terminate",
) -> dict[str, Any]:
    """Terminate (or suspend) one instance through its launcher; a terminated
    instance's token is revoked."""
    session.refresh(row)  # another request or replica may have ended it meanwhile
    if row.terminated_at is not None:
        return instance_wire(row, scope.namespace.name)
    plaintexts: list[str] = []
    try:
        order = _order_for(session, scope, box, row.provider_name, plaintexts, state)
        module = backend(state, order.launcher)
        fn = getattr(module, action, None)
        if fn is None:
            raise LaunchError(422, "unsupported", f"{order.launcher} cannot {action} instances")
        if action == "resume":  # only a daemon registering after this start counts
            tracking.forget_start(session, state, row)
        session.commit()  # no connection held while the launcher works
        fn(order, [row.instance_id])
    except LaunchRejected as exc:
        raise LaunchError(exc.status, exc.code, str(scrub(str(exc), plaintexts))) from None
    except registry.RegistryError:
        raise
    except Exception as exc:
        message = scrub(f"{type(exc).__name__}: {exc}", plaintexts)
        raise LaunchError(
            502, "launch_failed", f"could not {action} {row.instance_id}: {message}"
        ) from None
    if action == "terminate":
        row.state = "terminated"
        _ended(session, state, row, "the instance was terminated")
    elif action == "suspend":
        row.state = "stopping"
    else:  # resumed: the start timeout counts from now
        row.state = "pending"
        row.started_at = utcnow()
    session.commit()
    return instance_wire(row, scope.namespace.name)


def fail_instance(
    session: Session,
    scope: registry.Scope,
    box: SecretBox,
    state: Any,
    row: Instance,
    reason: str,
) -> dict[str, Any]:
    """Terminate ``row`` through its launcher and record it as ``failed`` with why."""
    stop_instance(session, scope, box, state, row, action="terminate")
    row.state = "failed"
    row.details = {**(row.details or {}), "reason": reason}
    session.commit()
    return instance_wire(row, scope.namespace.name)


def stop_orphan(
    session: Session, scope: registry.Scope, box: SecretBox, state: Any, orphan: Any
) -> None:
    """Tell an orphaned worker to stop: its token is revoked and its daemon is stopped
    through the launcher (the SSH host's supervisor, ``scancel``, the cloud), unless a
    live instance now has its id (a relaunch on the same host is never stopped)."""
    w, row = orphan.worker, orphan.row
    revoke(session, w.token_id, state)
    target = row.instance_id if row is not None else w.instance_id
    launcher = row.launcher if row is not None else None
    session.commit()
    live = session.scalar(
        select(Instance.id).where(
            Instance.namespace_id == w.namespace_id,
            Instance.provider_name == w.provider_name,
            Instance.instance_id.in_({target, w.instance_id}),
            Instance.terminated_at.is_(None),
        )
    )
    if live is not None:
        return
    plaintexts: list[str] = []
    try:
        order = _order_for(session, scope, box, w.provider_name, plaintexts, state)
        session.commit()
        module = backend(state, launcher or order.launcher)
        module.terminate(order, [target])
    except Exception as exc:
        detail = exc.detail if isinstance(exc, registry.RegistryError) else str(exc)
        raise LaunchError(
            502, "launch_failed", f"could not stop orphan {target}: {scrub(detail, plaintexts)}"
        ) from None


def terminate(
    session: Session, scope: registry.Scope, box: SecretBox, state: Any, instance_id: str
) -> dict[str, Any]:
    return stop_instance(session, scope, box, state, find(session, scope.namespace.id, instance_id))
