"""The ``queues`` resource: a queue names a provider (or several, with a placement
``strategy``: see ``capacity.queueplace``) and optionally a mode to grow workers through, between ``min`` and ``max``, reaping a worker idle past
``idle_seconds`` (terminated, or suspended when the launcher can and the queue says
``idle_action=suspend``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..launch import dispatch
from ..launch.models import Instance, Queue, QueueEvent
from ..launch.service import LaunchError, instance_wire
from ..models import WorkItem
from ..names import is_name
from ..registry import service as registry
from ..rowlock import lock_row
from ..server.json_guard import refuse_nul

IDLE_ACTIONS = ("terminate", "suspend")
FIELDS = (
    "name",
    "provider",
    "providers",
    "strategy",
    "mode",
    "min",
    "max",
    "idleSeconds",
    "idleAction",
)
MAX_PROVIDERS = 50


def _bad(detail: str) -> LaunchError:
    return LaunchError(422, "validation_error", detail)


def _iso(dt: datetime | None) -> str | None:
    return dt.isoformat().replace("+00:00", "Z") if dt else None


def queue_wire(row: Queue, namespace: str) -> dict[str, Any]:
    return {
        "name": row.name,
        "namespace": namespace,
        "provider": row.provider_name,
        "providers": list(row.providers or [row.provider_name]),
        "strategy": row.strategy,
        "mode": row.mode,
        "min": row.min_workers,
        "max": row.max_workers,
        "idleSeconds": row.idle_seconds,
        "idleAction": row.idle_action,
        "createdAt": _iso(row.created_at),
    }


def _check(body: Mapping[str, Any], partial: bool) -> dict[str, Any]:
    try:
        refuse_nul(body)  # checked before any lookup: PostgreSQL cannot hold NUL
    except ValueError as exc:
        raise _bad(str(exc)) from None
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise _bad(f"unknown field(s) {', '.join(unknown)}; the body is {{{', '.join(FIELDS)}}}")
    out: dict[str, Any] = {}
    if "name" in body or not partial:
        if not isinstance(body.get("name"), str) or not is_name(body["name"]):
            raise _bad("name must match ^[a-z0-9][a-z0-9-]*$")
        out["name"] = body["name"]
    if "providers" in body:
        names = body["providers"]
        if names is None:
            out["providers"] = None
        elif (
            not isinstance(names, list)
            or not 1 <= len(names) <= MAX_PROVIDERS
            or not all(isinstance(n, str) and n for n in names)
        ):
            raise _bad(f"providers must list 1 to {MAX_PROVIDERS} provider names")
        else:
            out["providers"] = list(dict.fromkeys(names))
            if "provider" not in body:
                out["provider_name"] = out["providers"][0]
    if "provider" in body or (not partial and "provider_name" not in out):
        if not isinstance(body.get("provider"), str) or not body["provider"]:
            raise _bad("provider must name a provider (or providers list several)")
        out["provider_name"] = body["provider"]
    if "strategy" in body:
        from ..capacity.decide import STRATEGIES

        if body["strategy"] is not None and body["strategy"] not in STRATEGIES:
            raise _bad(f"strategy must be one of {', '.join(STRATEGIES)}")
        out["strategy"] = body["strategy"]
    if "mode" in body:
        if body["mode"] is not None and not isinstance(body["mode"], str):
            raise _bad("mode must name a mode")
        out["mode"] = body["mode"] or None
    for key, col in (("min", "min_workers"), ("max", "max_workers")):
        if key in body:
            v = body[key]
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 1000:
                raise _bad(f"{key} must be a whole number from 0 to 1000")
            out[col] = v
    if "idleSeconds" in body:
        v = body["idleSeconds"]
        if not isinstance(v, int | float) or isinstance(v, bool) or v < 0:
            raise _bad("idleSeconds must be a number of seconds ≥ 0")
        out["idle_seconds"] = float(v)
    if "idleAction" in body:
        if body["idleAction"] not in IDLE_ACTIONS:
            raise _bad(f"idleAction must be one of {', '.join(IDLE_ACTIONS)}")
        out["idle_action"] = body["idleAction"]
    return out


def _row(session: Session, ns_id: int, name: str) -> Queue:
    row = session.scalar(select(Queue).where(Queue.namespace_id == ns_id, Queue.name == name))
    if row is None:
        raise LaunchError(404, "not_found", f"no queue named {name!r}")
    return row


def _validate_refs(session: Session, scope: registry.Scope, row: Queue) -> None:
    if row.max_workers < row.min_workers:
        raise _bad(f"max ({row.max_workers}) is below min ({row.min_workers})")
    provider = registry.get_provider_row(session, scope, row.provider_name)  # 404 when unknown
    refusal = dispatch.queue_refusal(row.provider_name, dispatch.of_provider(provider))
    if refusal:
        raise _bad(refusal)
    for name in row.providers or ():
        other = registry.get_provider_row(session, scope, name)
        refusal = dispatch.queue_refusal(name, dispatch.of_provider(other))
        if refusal:
            raise _bad(refusal)
    if row.providers and row.provider_name not in row.providers:
        row.providers = [row.provider_name, *row.providers]
    if row.mode:
        registry.get_mode(session, scope, row.mode)


def add(
    session: Session, scope: registry.Scope, body: Mapping[str, Any], server_url: str
) -> dict[str, Any]:
    values = _check(body, partial=False)
    row = Queue(namespace_id=scope.namespace.id, server_url=server_url, **values)
    row.min_workers = values.get("min_workers", 0)
    row.max_workers = values.get("max_workers", 1)
    row.idle_seconds = values.get("idle_seconds", 600.0)
    row.idle_action = values.get("idle_action", "terminate")
    _validate_refs(session, scope, row)
    session.add(row)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise LaunchError(409, "conflict", f"a queue named {values['name']!r} exists") from None
    return queue_wire(row, scope.namespace.name)


def update(
    session: Session, scope: registry.Scope, name: str, body: Mapping[str, Any], server_url: str
) -> dict[str, Any]:
    values = _check(body, partial=True)
    values.pop("name", None)
    row = _row(session, scope.namespace.id, name)
    if not lock_row(session, row):  # read again under the lock: no change is lost
        session.rollback()
        raise LaunchError(409, "conflict", f"queue {name!r} was removed meanwhile")
    for k, v in values.items():
        setattr(row, k, v)
    row.server_url = server_url or row.server_url
    _validate_refs(session, scope, row)
    session.commit()
    return queue_wire(row, scope.namespace.name)


def remove(session: Session, scope: registry.Scope, name: str) -> dict[str, Any]:
    row = _row(session, scope.namespace.id, name)
    wire = queue_wire(row, scope.namespace.name)
    session.delete(row)
    session.commit()
    return wire


def list_queues(session: Session, scope: registry.Scope) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(Queue).where(Queue.namespace_id == scope.namespace.id).order_by(Queue.name)
    )
    return [queue_wire(r, scope.namespace.name) for r in rows]


def pending(session: Session, row: Queue) -> int:
    return int(
        session.scalar(
            select(func.count())
            .select_from(WorkItem)
            .where(
                WorkItem.namespace_id == row.namespace_id,
                WorkItem.provider_name.in_(list(row.providers or [row.provider_name])),
                WorkItem.queue == row.name,
                WorkItem.state == "queued",
            )
        )
        or 0
    )


def status(session: Session, scope: registry.Scope, name: str, events: int = 20) -> dict[str, Any]:
    """The queue, its pending work, its workers and the loop's latest decisions."""
    row = _row(session, scope.namespace.id, name)
    ns = scope.namespace.name
    instances = session.scalars(
        select(Instance).where(
            Instance.namespace_id == row.namespace_id,
            Instance.queue == row.name,
            Instance.terminated_at.is_(None),
        )
    ).all()
    recent = session.scalars(
        select(QueueEvent)
        .where(QueueEvent.namespace_id == row.namespace_id, QueueEvent.queue == row.name)
        .order_by(QueueEvent.id.desc())
        .limit(events)
    ).all()
    out = queue_wire(row, ns)
    out["pending"] = pending(session, row)
    out["instances"] = [instance_wire(i, ns) for i in instances]
    out["events"] = [
        {"at": _iso(e.at), "action": e.action, "detail": e.detail, "by": e.holder}
        for e in reversed(recent)
    ]
    return out
