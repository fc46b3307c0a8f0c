"""What the dashboard shows of one namespace, read from the database in one session:
plain dictionaries of strings and numbers for the templates, nothing written but
the leases that ran out (the capacity listing ends them, as its route does).

Bounded for a large fleet: workers are counted per provider by the database, and
only the :data:`WORKERS_SHOWN` seen most recently are listed one by one; the other
lists are as long as the namespace's providers, queues, open leases and instances.
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from ...db import utcnow

WORKERS_SHOWN = 200
"""Workers listed one by one (the most recently seen); every one is counted."""
ENDED_LEASES_SHOWN = 20
"""Leases that ended (released, expired, ...) listed after the open ones."""
EVENTS_SHOWN = 3
"""A queue's latest placement decisions listed."""


def age(then: datetime | None, now: datetime) -> str:
    """``then`` as a short age (``42s``, ``5m``, ``3h``, ``2d``); ``-`` for none."""
    if then is None:
        return "-"
    seconds = int((now - then).total_seconds())
    if seconds < 0:
        return "in " + age(now - (then - now), now)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def namespaces(session: Any) -> list[str]:
    from sqlalchemy import select

    from ...models import Namespace

    return list(session.scalars(select(Namespace.name).order_by(Namespace.name)))


def namespace_view(session: Any, state: Any, name: str) -> dict[str, Any] | None:
    """Everything the panel shows of namespace ``name`` (None: no such namespace)."""
    from sqlalchemy import select

    from ...models import Namespace

    ns = session.scalar(select(Namespace).where(Namespace.name == name))
    if ns is None:
        return None
    now = utcnow()
    scope = _scope(session, state, ns)
    live_seconds = float(state.settings.live_seconds)
    doc: dict[str, Any] = {"namespace": name, "at": now.strftime("%Y-%m-%d %H:%M:%S UTC")}
    doc["capacity"] = _capacity(session, state, scope, live_seconds)
    doc["providers"] = _providers(session, scope, doc["capacity"], now)
    doc["workers"], doc["workerCounts"] = _workers(session, state, ns.id, now, live_seconds)
    doc["queues"] = _queues(session, scope)
    doc["leases"] = _leases(session, ns.id, now)
    doc["instances"] = _instances(session, ns.id, now)
    return doc


def _scope(session: Any, state: Any, ns: Any) -> Any:
    from ...registry import service as registry
    from ..deps import org_namespace_ids

    return registry.Scope(
        namespace=ns,
        org_ids=org_namespace_ids(session, ns),
        unscoped=bool(getattr(state, "unscoped_listings", True)),
    )


def _lifecycle(wire: dict[str, Any], now: datetime) -> dict[str, str]:
    """What dreamlake's watcher last published for a provider (its ``observed``
    member): the lifecycle status, the drift if any, and how long ago."""
    observed = wire.get("observed")
    if not isinstance(observed, dict):
        return {"status": "-", "drift": "", "seen": ""}
    drift = observed.get("drift")
    text = ""
    if isinstance(drift, dict):
        names = [str(r) for r in drift.get("resources") or []]
        count = drift.get("count", len(names))
        text = f"{count} drifted" + (": " + ", ".join(names[:3]) if names else "")
        text += " …" if len(names) > 3 else ""
    elif drift:
        text = str(drift)
    seen = ""
    with contextlib.suppress(TypeError, ValueError):
        seen = age(datetime.fromisoformat(str(observed.get("observedAt"))), now)
    return {"status": str(observed.get("status") or "-"), "drift": text, "seen": seen}


def _providers(
    session: Any, scope: Any, capacity: dict[str, Any], now: datetime
) -> list[dict[str, Any]]:
    from ...registry import service as registry

    out = []
    for wire in registry.list_providers(session, scope):
        if wire.get("namespace") != scope.namespace.name:
            continue  # an org sibling's row: shown on its own namespace's page
        cap = capacity.get(wire["name"], {})
        backoff = cap.get("backoff") or {}
        out.append(
            {
                "name": wire["name"],
                "launcher": wire.get("launcher", "?"),
                "dispatch": wire.get("dispatch", "?"),
                **_lifecycle(wire, now),
                "error": wire.get("unreadable") or cap.get("error") or "",
                "backoff": backoff.get("reason") or "",
            }
        )
    return out


def _workers(
    session: Any, state: Any, ns_id: int, now: datetime, live_seconds: float
) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    from sqlalchemy import and_, case, func, select

    from ...models import Worker

    cutoff = now - timedelta(seconds=live_seconds)
    live = case((and_(Worker.deregistered_at.is_(None), Worker.last_seen >= cutoff), 1), else_=0)
    counts = {
        provider: {"live": int(n_live or 0), "gone": int(n - (n_live or 0))}
        for provider, n, n_live in session.execute(
            select(Worker.provider_name, func.count(), func.sum(live))
            .where(Worker.namespace_id == ns_id)
            .group_by(Worker.provider_name)
        ).all()
    }
    hb = getattr(state, "heartbeats", None)
    cols = (
        Worker.id,
        Worker.provider_name,
        Worker.instance_id,
        Worker.host,
        Worker.last_seen,
        Worker.polled_at,
        Worker.deregistered_at,
    )
    rows = session.execute(
        select(*cols)
        .where(Worker.namespace_id == ns_id)
        .order_by(Worker.last_seen.desc())
        .limit(WORKERS_SHOWN)
    ).all()
    out = []
    for row in rows:
        w = SimpleNamespace(**row._asdict())
        if hb is not None:
            hb.overlay_with(w)
        alive = w.deregistered_at is None and w.last_seen >= cutoff
        out.append(
            {
                "id": w.id,
                "provider": w.provider_name,
                "instance": w.instance_id,
                "host": w.host,
                "state": "live" if alive else "gone",
                "lastSeen": age(w.last_seen, now),
            }
        )
    return out, counts


def _queues(session: Any, scope: Any) -> list[dict[str, Any]]:
    try:
        from ...queues import service as queues
    except ModuleNotFoundError:
        return []
    out = []
    for q in queues.list_queues(session, scope):
        if q.get("namespace") not in (None, scope.namespace.name):
            continue
        with contextlib.suppress(Exception):  # a queue removed meanwhile
            status = queues.status(session, scope, q["name"], events=EVENTS_SHOWN)
            out.append(
                {
                    "name": q["name"],
                    "providers": ", ".join(q.get("providers") or [q.get("provider") or "?"]),
                    "pending": status.get("pending", 0),
                    "instances": len(status.get("instances") or []),
                    "events": [
                        f"{e.get('at') or ''} {e.get('action')}: {e.get('detail') or ''}".strip()
                        for e in reversed(status.get("events") or [])
                    ],
                }
            )
    return out


def _leases(session: Any, ns_id: int, now: datetime) -> list[dict[str, Any]]:
    from sqlalchemy import select

    try:
        from ...capacity.models import ACTIVE, CapacityLease
    except ModuleNotFoundError:
        return []
    base = select(CapacityLease).where(CapacityLease.namespace_id == ns_id)
    open_rows = session.scalars(
        base.where(CapacityLease.state.in_((*ACTIVE, "pending"))).order_by(CapacityLease.expires_at)
    ).all()
    ended = session.scalars(
        base.where(CapacityLease.state.not_in((*ACTIVE, "pending")))
        .order_by(CapacityLease.updated_at.desc())
        .limit(ENDED_LEASES_SHOWN)
    ).all()
    out = []
    for row in [*open_rows, *ended]:
        decision = row.decision if isinstance(row.decision, dict) else {}
        reasons = [
            f"{r.get('provider', '?')}: {r.get('detail') or r.get('reason') or ''}"
            for r in (decision.get("rejected") or [])[:5]
            if isinstance(r, dict)
        ]
        out.append(
            {
                "id": row.id,
                "state": row.state,
                "provider": row.provider_name or "-",
                "offer": row.offer or "-",
                "expires": age(row.expires_at, now) if row.state in (*ACTIVE, "pending") else "",
                "reason": row.reason or "",
                "summary": str(decision.get("summary") or ""),
                "rejected": reasons,
            }
        )
    return out


def _instances(session: Any, ns_id: int, now: datetime) -> list[dict[str, Any]]:
    try:
        from ...launch.service import rows_for
    except ModuleNotFoundError:
        return []
    return [
        {
            "id": r.instance_id,
            "provider": r.provider_name,
            "launcher": r.launcher,
            "queue": r.queue or "",
            "state": r.state,
            "age": age(r.started_at or r.created_at, now),
        }
        for r in rows_for(session, ns_id)
    ]


def _offer(o: dict[str, Any]) -> str:
    """An offer in a few words: ``std (4 cpus, 16 GB, $0.19/h)``."""
    parts = []
    if o.get("accelerators"):
        parts.append(f"{o['accelerators']}× {o.get('accelerator') or 'accelerator'}")
    if o.get("cpus"):
        parts.append(f"{o['cpus']:g} cpus")
    if o.get("memoryGb"):
        parts.append(f"{o['memoryGb']:g} GB")
    if o.get("pricePerHour") is not None:
        parts.append(f"${o['pricePerHour']:g}/h")
    name = str(o.get("offer") or "?")
    return f"{name} ({', '.join(parts)})" if parts else name


def _capacity(
    session: Any, state: Any, scope: Any, live_seconds: float
) -> dict[str, dict[str, Any]]:
    """The capacity listing's providers by name (empty without the capacity module)."""
    try:
        from ...capacity import service as capacity
    except ModuleNotFoundError:
        return {}
    hb = getattr(state, "heartbeats", None)
    listing = capacity.listing(session, scope, live_seconds, hb.overlay if hb else None)
    out: dict[str, dict[str, Any]] = {}
    for p in listing.get("providers") or []:
        if p.get("namespace") != scope.namespace.name:
            continue
        offers = p.get("offers") or []
        workers = p.get("workers") or {}
        out[p["name"]] = {
            **p,
            "offerNames": ", ".join(_offer(o) for o in offers if isinstance(o, dict)),
            "live": workers.get("live", 0),
            "idle": workers.get("idle", 0),
            "launching": workers.get("launching", 0),
        }
    return out
