"""Leases: a unit of capacity held for a while — an idle worker, or an instance
launched for the lease — on the provider the decision chose.

``request`` stores the lease, decides, and takes the chosen unit by writing its
``slot`` (unique: two replicas cannot take one unit; the loser decides again
without that unit). A request that cannot be met now stays ``pending`` with the
decision's reason and is granted later by the reconcile loop when capacity frees
up. ``renew`` moves the expiry; ``release`` and expiry end the lease and free the
slot at once (an instance launched for the lease is terminated). A launch refused
for capacity or quota puts its provider in back-off and the next offer is tried
in the same request.

A granted lease whose unit went away — the idle worker it was granted on, or the
daemon of the instance launched for it, killed, cut off past the liveness window or
deregistered, or that instance ended — is returned to ``pending`` with the reason
(:func:`lapse`; an instance launched for it is terminated) and granted again when a
unit frees up. The daemon of an instance is found by identity, as launch tracking
finds it (``tracking.belongs``), never by comparing clocks. Renewing a pending
lease answers ``pending`` (202), never as if it were granted.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ..db import utcnow
from ..launch import service as launches
from ..launch import tracking
from ..launch.models import Instance
from ..models import Worker
from ..registry import service as registry
from ..registry.service.common import RegistryError
from ..server import store
from ..server.json_guard import refuse_nul
from .decide import MAX_TTL, Request, RequestError, decide
from .granting import Context, grant
from .models import ACTIVE, CapacityLease
from .service import expire, snapshot

log = logging.getLogger("lakeshore.capacity")

PENDING_PER_TICK = 20
LEASE_FIELDS = ("mode",)


def _bad(detail: str) -> RegistryError:
    return RegistryError(422, "validation_error", detail)


def _iso(dt: datetime | None) -> str | None:
    return dt.isoformat().replace("+00:00", "Z") if dt else None


def lease_wire(row: CapacityLease, namespace: str) -> dict[str, Any]:
    return {
        "id": row.id,
        "namespace": namespace,
        "state": row.state,
        "provider": row.provider_name,
        "offer": row.offer,
        "via": row.via,
        "workerId": row.worker_id,
        "instanceId": row.instance_id,
        "reason": row.reason,
        "ttlSeconds": row.ttl_seconds,
        "createdAt": _iso(row.created_at),
        "grantedAt": _iso(row.granted_at),
        "expiresAt": _iso(row.expires_at),
        "endedAt": _iso(row.ended_at),
        "request": row.request,
        "decision": row.decision,
    }


def parse(body: Mapping[str, Any]) -> tuple[Request, dict[str, Any]]:
    try:
        refuse_nul(body)
    except ValueError as exc:
        raise _bad(str(exc)) from None
    own = {k: body[k] for k in LEASE_FIELDS if k in body}
    if own.get("mode") is not None and not isinstance(own["mode"], str):
        raise _bad("mode must name a mode (what an instance launched for the lease runs)")
    try:
        req = Request.from_wire({k: v for k, v in body.items() if k not in LEASE_FIELDS})
    except RequestError as exc:
        raise _bad(str(exc)) from None
    return req, own


def request(
    session: Session, scope: registry.Scope, ctx: Context, body: Mapping[str, Any]
) -> dict[str, Any]:
    req, own = parse(body)
    if own.get("mode"):
        registry.get_mode(session, scope, own["mode"])  # 404 now, not at launch
    now = utcnow()
    row = CapacityLease(
        id=f"lse-{uuid.uuid4().hex}",
        namespace_id=scope.namespace.id,
        state="pending",
        request={**req.wire(), **own, "serverUrl": ctx.server_url},
        ttl_seconds=req.ttl,
        created_at=now,
        expires_at=now + timedelta(seconds=req.ttl),
        launched=0,
    )
    session.add(row)
    session.commit()
    expire(session, scope.namespace.id)
    grant(session, scope, ctx, row, req, own)
    return lease_wire(row, scope.namespace.name)


def decision(
    session: Session, scope: registry.Scope, ctx: Context, body: Mapping[str, Any]
) -> dict[str, Any]:
    """The decision a lease request would get now, without leasing anything."""
    req, _ = parse(body)
    expire(session, scope.namespace.id)
    snap = snapshot(session, scope, ctx.live_seconds, ctx.overlay)
    return decide(req, snap.catalog(), snap.states(), snap.now)


def _row(session: Session, scope: registry.Scope, lease_id: str) -> CapacityLease:
    row = session.get(CapacityLease, lease_id) if len(lease_id) <= 40 else None
    if row is None or row.namespace_id != scope.namespace.id:
        raise RegistryError(
            404, "not_found", f"no lease {lease_id!r}; see: lakeshore lease list --all"
        )
    return row


# -- a unit that went away -----------------------------------------------------------


def _gone_worker(
    w: Worker | None, what: str, live_seconds: float, overlay: Any, now: datetime
) -> str | None:
    """Why ``w`` no longer serves (None: it is live)."""
    if w is None:
        return f"{what} is no longer registered"
    if w.deregistered_at is not None:
        return f"{what} deregistered (stopped, killed, or its instance ended)"
    seen = overlay(w) if overlay is not None else w
    if not store.is_live(seen, live_seconds, now):
        return f"{what} has not been heard from for over {live_seconds:.0f}s (cut off or killed)"
    return None


def unit_gone(
    session: Session, row: CapacityLease, live_seconds: float, overlay: Any = None
) -> str | None:
    """Why the granted lease ``row`` no longer holds a unit, or None while it does: its
    idle worker went away, or the instance launched for it ended or its daemon went
    away. An instance whose daemon has not registered yet is starting (the start
    timeout of launch tracking fails it when it never does)."""
    if row.state != "granted":
        return None
    now = utcnow()
    if row.via == "idle":
        w = session.get(Worker, row.worker_id) if row.worker_id else None
        return _gone_worker(
            w, f"its worker {row.instance_id or row.worker_id}", live_seconds, overlay, now
        )
    if not row.launched or not row.instance_id or row.provider_name is None:
        return None
    inst = session.scalar(
        select(Instance)
        .where(
            Instance.namespace_id == row.namespace_id,
            Instance.provider_name == row.provider_name,
            Instance.instance_id == row.instance_id,
        )
        .order_by(Instance.terminated_at.is_(None).desc(), Instance.id.desc())
        .limit(1)
    )
    if inst is None:
        return f"its instance {row.instance_id} is no longer known"
    if inst.terminated_at is not None:
        why = (inst.details or {}).get("reason")
        return f"its instance {inst.instance_id} was {inst.state}" + (f": {why}" if why else "")
    mine = [
        w
        for w in session.scalars(
            select(Worker).where(
                Worker.namespace_id == inst.namespace_id,
                Worker.provider_name == inst.provider_name,
            )
        )
        # this start's daemon: a row a daemon of an earlier instance with the same id
        # left (deregistered, another token) is not this instance's
        if tracking.belongs(w, inst)
        and (w.token_id is None or inst.token_id is None or w.token_id == inst.token_id)
    ]
    if not mine:
        return None  # its daemon has not registered yet
    whys = [
        _gone_worker(w, f"the daemon on {inst.instance_id}", live_seconds, overlay, now)
        for w in mine
    ]
    if any(why is None for why in whys):
        return None
    return whys[0]


def lapse(
    session: Session, scope: registry.Scope, ctx: Context, rows: list[CapacityLease] | None = None
) -> list[str]:
    """Return every granted lease of the namespace (or of ``rows``) whose unit went
    away to ``pending`` with the reason, freeing its slot; an instance launched for
    it is terminated. Returns their ids."""
    if rows is None:
        rows = list(
            session.scalars(
                select(CapacityLease).where(
                    CapacityLease.namespace_id == scope.namespace.id,
                    CapacityLease.state == "granted",
                )
            )
        )
    ids = [r.worker_id for r in rows if r.via == "idle" and r.worker_id]
    if ids:  # one query: unit_gone's look-ups hit the session's identity map
        list(session.scalars(select(Worker).where(Worker.id.in_(ids))))
    back: list[str] = []
    for row in rows:
        why = unit_gone(session, row, ctx.live_seconds, ctx.overlay)
        if why is None:
            continue
        ended = CapacityLease(
            namespace_id=row.namespace_id,
            provider_name=row.provider_name,
            instance_id=row.instance_id,
            launched=row.launched,
        )
        res = session.execute(
            update(CapacityLease)
            .where(CapacityLease.id == row.id, CapacityLease.state == "granted")
            .values(
                state="pending",
                slot=None,
                worker_id=None,
                instance_id=None,
                launched=0,
                granted_at=None,
                reason=f"{why}; the lease waits for another unit"[:4000],
            )
            .execution_options(synchronize_session=False)
        )
        session.commit()
        session.refresh(row)
        if res.rowcount != 1:  # type: ignore[attr-defined]
            continue  # released, expired or returned meanwhile
        back.append(row.id)
        log.info("capacity: lease %s is pending again: %s", row.id, why)
        error = end_instance(session, scope, ctx, ended)
        if error:
            log.warning("capacity: lease %s: the instance launched for it: %s", row.id, error)
    return back


def get(
    session: Session, scope: registry.Scope, lease_id: str, ctx: Context | None = None
) -> dict[str, Any]:
    expire(session, scope.namespace.id)
    row = _row(session, scope, lease_id)
    if ctx is not None:
        lapse(session, scope, ctx, [row])
    return lease_wire(row, scope.namespace.name)


def list_leases(
    session: Session, scope: registry.Scope, *, all_: bool = False, ctx: Context | None = None
) -> dict[str, Any]:
    expire(session, scope.namespace.id)
    if ctx is not None:
        lapse(session, scope, ctx)
    q = select(CapacityLease).where(CapacityLease.namespace_id == scope.namespace.id)
    if not all_:
        q = q.where(CapacityLease.state.in_((*ACTIVE, "pending")))
    rows = session.scalars(q.order_by(CapacityLease.created_at).limit(5000)).all()
    return {"leases": [lease_wire(r, scope.namespace.name) for r in rows]}


def renew(
    session: Session,
    scope: registry.Scope,
    lease_id: str,
    body: Mapping[str, Any],
    ctx: Context | None = None,
) -> dict[str, Any]:
    """Move the expiry of a granted or pending lease (the answer says which it is:
    one whose unit went away is pending again, with the reason)."""
    if set(body) - {"ttlSeconds"}:
        raise _bad("the body is {ttlSeconds?}")
    expire(session, scope.namespace.id)
    row = _row(session, scope, lease_id)
    if ctx is not None:
        lapse(session, scope, ctx, [row])
    ttl = body.get("ttlSeconds", row.ttl_seconds)
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 1 <= ttl <= MAX_TTL:
        raise _bad(f"ttlSeconds must be from 1 to {MAX_TTL:.0f}")
    until = utcnow() + timedelta(seconds=float(ttl))
    res = session.execute(
        update(CapacityLease)
        .where(CapacityLease.id == row.id, CapacityLease.state.in_((*ACTIVE, "pending")))
        .values(expires_at=until, ttl_seconds=float(ttl))
        .execution_options(synchronize_session=False)
    )
    session.commit()
    session.refresh(row)
    if res.rowcount != 1:  # type: ignore[attr-defined]
        raise RegistryError(
            409,
            "conflict",
            f"lease {lease_id} has {row.state}; ask for a new one: lakeshore lease request",
        )
    return lease_wire(row, scope.namespace.name)


def release(session: Session, scope: registry.Scope, ctx: Context, lease_id: str) -> dict[str, Any]:
    row = _row(session, scope, lease_id)
    now = utcnow()
    session.execute(
        update(CapacityLease)
        .where(CapacityLease.id == row.id, CapacityLease.state.in_((*ACTIVE, "pending")))
        .values(state="released", slot=None, ended_at=now, reason="released")
        .execution_options(synchronize_session=False)
    )
    session.commit()
    session.refresh(row)
    out = lease_wire(row, scope.namespace.name)
    error = end_instance(session, scope, ctx, row)
    if error:
        out["terminateError"] = error
    return out


def end_instance(
    session: Session, scope: registry.Scope, ctx: Context, row: CapacityLease
) -> str | None:
    """Terminate the instance launched for an ended lease; the error, if any."""
    if not row.launched or not row.instance_id or row.provider_name is None or ctx.box is None:
        return None
    inst = session.scalar(
        select(Instance).where(
            Instance.namespace_id == row.namespace_id,
            Instance.provider_name == row.provider_name,
            Instance.instance_id == row.instance_id,
            Instance.terminated_at.is_(None),
        )
    )
    if inst is None:
        return None
    try:
        launches.stop_instance(session, scope, ctx.box, ctx.state, inst, action="terminate")
    except RegistryError as exc:
        session.rollback()
        return exc.detail
    return None
