"""The capacity part of the one reconcile loop (run by ``queues.loop`` under its
database lease, after the queues): leases past their expiry end and free their
unit (an instance launched for one is terminated), granted leases whose unit went
away are pending again with the reason (``leases.lapse``), and pending leases are tried
again, the longest untried first, a bounded number per namespace and tick."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from typing import Any

from sqlalchemy import select

from ..launch.routes_common import PUBLIC_URL_ENV
from ..models import Namespace
from ..registry import service as registry
from ..server.deps import org_namespace_ids
from ..server.runtime import heartbeats_of
from .decide import Request, RequestError, decide
from .leases import LEASE_FIELDS, PENDING_PER_TICK, Context, end_instance, grant, lapse
from .models import CapacityLease
from .service import expire, snapshot

log = logging.getLogger("lakeshore.capacity")


def _scope(s: Any, app: Any, ns: Namespace) -> registry.Scope:
    return registry.Scope(
        namespace=ns,
        org_ids=org_namespace_ids(s, ns),
        unscoped=bool(getattr(app.state, "unscoped_listings", True)),
    )


def tick(app: Any, box: Any, budget: float = 1.0) -> None:
    """One pass; granting pending leases stops after about ``budget`` seconds."""
    started = time.monotonic()
    tried = _tick(app, box, budget)
    took = time.monotonic() - started
    if took > SLOW_TICK:
        log.info("capacity: a reconcile pass took %.2fs (%d pending lease(s) tried)", took, tried)


SLOW_TICK = 1.0


def _tick(app: Any, box: Any, budget: float) -> int:
    state = app.state
    with state.sessionmaker() as s:
        ended = expire(s)
        ended_rows = [r for r in (s.get(CapacityLease, i) for i in ended) if r is not None]
        granted = s.scalars(
            select(CapacityLease).where(CapacityLease.state == "granted").limit(MAX_PENDING_SEEN)
        ).all()
        pending = s.scalars(
            select(CapacityLease)
            .where(CapacityLease.state == "pending")
            .order_by(CapacityLease.created_at)
            .limit(MAX_PENDING_SEEN)
        ).all()
        if not ended_rows and not pending and not granted:
            return 0
        ctx = Context(
            state=state,
            box=box,
            server_url="",
            live_seconds=state.settings.live_seconds,
            overlay=heartbeats_of(app).overlay,
        )
        scopes: dict[int, registry.Scope] = {}

        def scope_of(ns_id: int) -> registry.Scope | None:
            if ns_id not in scopes:
                ns = s.get(Namespace, ns_id)
                if ns is None:
                    return None
                scopes[ns_id] = _scope(s, app, ns)
            return scopes[ns_id]

        for row in ended_rows:
            sc = scope_of(row.namespace_id)
            if sc is not None and row.launched:
                error = end_instance(s, sc, ctx, row)
                if error:
                    log.warning("capacity: lease %s ended; terminate failed: %s", row.id, error)
        by_held: dict[int, list[CapacityLease]] = {}
        for row in granted:
            by_held.setdefault(row.namespace_id, []).append(row)
        for ns_id, held_rows in by_held.items():
            sc = scope_of(ns_id)
            if sc is not None:
                back = lapse(s, sc, ctx, held_rows)
                pending = [*pending, *(r for r in held_rows if r.id in back)]
        by_ns: dict[int, list[CapacityLease]] = {}
        for row in pending:
            by_ns.setdefault(row.namespace_id, []).append(row)
        tried = 0
        for ns_id, rows in by_ns.items():
            sc = scope_of(ns_id)
            if sc is not None:
                tried += _retry(s, sc, ctx, rows, budget)
        return tried


MAX_PENDING_SEEN = 2000


def _retry(
    s: Any, sc: registry.Scope, ctx: Context, rows: list[CapacityLease], budget: float
) -> int:
    """Decide every pending lease of one namespace on one snapshot (pure, cheap);
    only those that could be met now go through ``grant`` (which takes the unit),
    for at most ``budget`` seconds."""
    deadline = time.monotonic() + budget
    snap = snapshot(s, sc, ctx.live_seconds, ctx.overlay)
    catalog, states = snap.catalog(), snap.states()
    granted = 0
    for row in rows:
        stored = dict(row.request or {})
        url = str(stored.pop("serverUrl", "") or "") or os.environ.get(PUBLIC_URL_ENV, "")
        own = {k: stored.pop(k) for k in LEASE_FIELDS if k in stored}
        try:
            req = Request.from_wire(stored)
        except RequestError:
            continue
        doc = decide(req, catalog, states, snap.now)
        if doc["chosen"] is None:
            continue
        try:
            grant(s, sc, dataclasses.replace(ctx, server_url=url), row, req, own)
        except Exception:
            s.rollback()
            log.exception("capacity: lease %s could not be tried again", row.id)
        granted += 1
        if granted >= PENDING_PER_TICK or time.monotonic() > deadline:
            break  # the rest next pass: expiry must not wait behind a long list
        snap = snapshot(s, sc, ctx.live_seconds, ctx.overlay)
        catalog, states = snap.catalog(), snap.states()
    return granted
