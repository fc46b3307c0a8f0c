"""Granting a pending lease: decide, take the chosen unit by writing its ``slot``
(unique: two replicas cannot take one unit; the loser decides again without that
unit), and for an offer with no idle worker launch an instance for the lease. A
launch refused for capacity or quota puts its provider in back-off and the next
offer is tried in the same request; a lease nothing can serve now stays ``pending``
with the decision's reason."""

from __future__ import annotations

import hashlib
import logging
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..db import utcnow
from ..launch import service as launches
from ..launch.dispatch import DAEMON, HYBRID
from ..launch.models import Instance
from ..registry import service as registry
from ..registry.crypto import SecretBox
from ..registry.service.common import RegistryError
from ..server import store
from . import backoff
from .decide import Request, decide
from .models import ACTIVE, CapacityLease
from .refusal import capacity_refusal
from .service import Snapshot, expire, snapshot

log = logging.getLogger("lakeshore.capacity")

ROUNDS = 6
"""Decisions one request makes at most (each round after a unit was taken by
someone else meanwhile, or a launch was refused for capacity)."""
TRIES_PER_ROUND = 8


@dataclass(frozen=True)
class Context:
    """What granting needs beyond the session: the server's state (launchers, the
    notifier), the secret box, the URL instances reach the server at, liveness."""

    state: Any
    box: SecretBox | None
    server_url: str
    live_seconds: float
    overlay: Any = None


def _take(
    session: Session, row: CapacityLease, slot: str, worker_id: str | None = None, **values: Any
) -> bool:
    """Write ``slot`` on the pending lease ``row``: False when another lease holds it
    or, for an idle worker's slot, when the worker took an item since the snapshot
    (checked under its row lock, which a claim takes too: see ``store.lock_worker``)."""
    where = [CapacityLease.id == row.id, CapacityLease.state == "pending"]
    if worker_id is not None:
        store.lock_worker(session, worker_id)
        where.append(~store.running_on(worker_id))
        values["worker_id"] = worker_id
    try:
        res = session.execute(
            update(CapacityLease)
            .where(*where)
            .values(slot=slot, **values)
            .execution_options(synchronize_session=False)
        )
        session.commit()
    except IntegrityError:
        session.rollback()
        return False
    if res.rowcount != 1:  # type: ignore[attr-defined]
        return False  # released or expired meanwhile
    session.refresh(row)
    return True


def _unit_slot(session: Session, row: CapacityLease, snap: Snapshot, provider: str) -> str | None:
    """The lowest unit slot free under the provider's limit (None: no limit)."""
    view = snap.providers[provider]
    if view.limit is None:
        return f"u:{row.namespace_id}:{provider}:{uuid.uuid4().hex}"
    held = set(
        session.scalars(
            select(CapacityLease.slot).where(
                CapacityLease.namespace_id == row.namespace_id,
                CapacityLease.provider_name == provider,
                CapacityLease.state.in_(ACTIVE),
                CapacityLease.slot.startswith(f"u:{row.namespace_id}:{provider}:"),
            )
        )
    )
    # units held by instances no lease launched come first
    others = view.instances - len(held)
    for k in range(max(0, others), view.limit):
        slot = f"u:{row.namespace_id}:{provider}:{k}"
        if slot not in held:
            return slot
    return None


def grant(
    session: Session,
    scope: registry.Scope,
    ctx: Context,
    row: CapacityLease,
    req: Request,
    own: Mapping[str, Any],
) -> None:
    """Try to grant the pending lease ``row`` now; left pending with the reason."""
    doc: dict[str, Any] | None = None
    failures: list[str] = []
    for n in range(ROUNDS):
        if n:
            expire(session, row.namespace_id)  # a unit whose lease just ran out is free
        snap = snapshot(session, scope, ctx.live_seconds, ctx.overlay)
        doc = decide(req, snap.catalog(), snap.states(), snap.now)
        chosen = doc["chosen"]
        if chosen is None:
            break
        provider, offer = chosen["provider"], chosen["offer"]
        now = utcnow()
        if chosen["via"] == "idle":
            workers = list(snap.providers[provider].idle_by_offer.get(offer, []))
            random.shuffle(workers)
            for w in workers[:TRIES_PER_ROUND]:
                if _take(
                    session,
                    row,
                    f"w:{w.id}",
                    state="granted",
                    provider_name=provider,
                    offer=offer,
                    via="idle",
                    worker_id=w.id,
                    instance_id=w.instance_id,
                    decision=doc,
                    reason=None,
                    granted_at=now,
                    expires_at=now + timedelta(seconds=req.ttl),
                ):
                    return
            continue  # every one was taken meanwhile: decide again
        slot = _unit_slot(session, row, snap, provider)
        if slot is None or not _take(
            session,
            row,
            slot,
            state="launching",
            provider_name=provider,
            offer=offer,
            via="launch",
            decision=doc,
            reason=None,
        ):
            continue
        outcome, why = _launch(session, scope, ctx, row, snap, provider, offer, own, req)
        if outcome == "granted":
            return
        failures.append(why)
        if outcome == "failed":
            break  # not a capacity refusal: the lease waits with the launcher's answer
    _pending(session, row, doc, failures)


def _pending(
    session: Session, row: CapacityLease, doc: dict[str, Any] | None, failures: list[str]
) -> None:
    reason = doc["summary"] if doc is not None else "no decision could be made"
    if failures:
        reason = "; ".join([*failures, reason])
    session.execute(
        update(CapacityLease)
        .where(CapacityLease.id == row.id, CapacityLease.state.in_(("pending", "launching")))
        .values(state="pending", slot=None, reason=reason[:4000], decision=doc)
        .execution_options(synchronize_session=False)
    )
    session.commit()
    session.refresh(row)


def _launch(
    session: Session,
    scope: registry.Scope,
    ctx: Context,
    row: CapacityLease,
    snap: Snapshot,
    provider: str,
    offer: str,
    own: Mapping[str, Any],
    req: Request,
) -> tuple[str, str]:
    """Launch one instance for the lease: ``("granted", "")``, or ``("refused", why)``
    (a capacity refusal: the provider is in back-off, try the next offer) or
    ``("failed", why)``; either way the lease is pending again, its slot freed."""
    if ctx.box is None:
        _unlaunched(session, row)
        return "failed", "the secret key is not loaded on this server"
    spec = next(o for o in snap.providers[provider].offers if o.name == offer)
    # one client token per lease and provider: a retry launches once, a failover anew
    tag = hashlib.sha256(provider.encode()).hexdigest()[:10]
    body: dict[str, Any] = {
        "provider": provider,
        "count": 1,
        "clientToken": f"l{row.id[4:30]}-{tag}",
    }
    if spec.launch:
        body["runConfig"] = dict(spec.launch)
    if own.get("mode"):
        body["mode"] = own["mode"]
    if snap.providers[provider].dispatch == HYBRID:
        body["dispatch"] = DAEMON  # a lease holds a worker: the daemon half
    try:
        out = launches.launch(
            session,
            scope,
            ctx.box,
            body,
            state=ctx.state,
            server_url=ctx.server_url,
            data_dir=ctx.state.settings.data_dir,
            reserved=1,  # this lease's slot
        )
    except RegistryError as exc:
        why = capacity_refusal(f"{exc.code} {exc.detail}")
        _unlaunched(session, row)
        if why is not None:
            backoff.refused(session, row.namespace_id, provider, why)
            log.info("capacity: %s refused a launch (%s); trying the next offer", provider, why)
            return "refused", f"{provider} refused the launch: {why}"
        return "failed", f"the launch on {provider} failed: {exc.detail}"
    backoff.cleared(session, row.namespace_id, provider)
    ids = [i["id"] for i in out.get("instances", [])]
    for inst in session.scalars(
        select(Instance).where(
            Instance.namespace_id == row.namespace_id,
            Instance.provider_name == provider,
            Instance.instance_id.in_(ids),
        )
    ):
        inst.details = {**(inst.details or {}), "offer": offer, "lease": row.id}
    now = utcnow()
    session.execute(
        update(CapacityLease)
        .where(CapacityLease.id == row.id, CapacityLease.state == "launching")
        .values(
            state="granted",
            instance_id=ids[0] if ids else None,
            launched=1,
            granted_at=now,
            expires_at=now + timedelta(seconds=req.ttl),
        )
        .execution_options(synchronize_session=False)
    )
    session.commit()
    session.refresh(row)
    return "granted", ""


def _unlaunched(session: Session, row: CapacityLease) -> None:
    session.rollback()
    session.execute(
        update(CapacityLease)
        .where(CapacityLease.id == row.id, CapacityLease.state == "launching")
        .values(state="pending", slot=None)
        .execution_options(synchronize_session=False)
    )
    session.commit()
