"""What the dashboard shows of one namespace, read from the database in one session:
plain dictionaries of strings and numbers for the templates. Nothing is written but
the capacity leases that ran out, ended as the capacity listing ends them.

Bounded for a large fleet (the page of a namespace with 1,000 providers and 10,000
workers renders in well under a second, benchmarks/dashboard.py): the providers are
read as plain columns, what is counted per provider (workers live and gone, busy,
leased, instances) is counted by the database in one grouped query each, and only
the most recent :data:`SHOWN` workers, leases and instances are listed one by one.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import OrderedDict
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from ...db import utcnow

SHOWN = 200
"""Workers (the most recently seen), open leases (the soonest to expire) and
instances (the newest) listed one by one; every one is counted."""
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
    _expire_leases(session, ns.id, now)
    live_seconds = float(state.settings.live_seconds)
    doc: dict[str, Any] = {"namespace": name, "at": now.strftime("%Y-%m-%d %H:%M:%S UTC")}
    doc["workers"], doc["workerCount"], counts = _workers(session, state, ns.id, now, live_seconds)
    doc["providers"] = _providers(session, ns.id, now, counts)
    doc["queues"] = _queues(session, state, ns)
    doc["leases"], doc["leaseCount"] = _leases(session, ns.id, now)
    doc["instances"], doc["instanceCount"] = _instances(session, ns.id, now)
    return doc


def _expire_leases(session: Any, ns_id: int, now: datetime) -> None:
    try:
        from ...capacity.service import expire
    except ModuleNotFoundError:
        return
    expire(session, ns_id, now)


def _grouped(session: Any, query: Any) -> dict[str, int]:
    return {str(k): int(n or 0) for k, n in session.execute(query).all()}


def _workers(
    session: Any, state: Any, ns_id: int, now: datetime, live_seconds: float
) -> tuple[list[dict[str, Any]], int, dict[str, dict[str, int]]]:
    from sqlalchemy import and_, case, func, select

    from ...models import Worker, WorkItem

    cutoff = now - timedelta(seconds=live_seconds)
    live = case((and_(Worker.deregistered_at.is_(None), Worker.last_seen >= cutoff), 1), else_=0)
    counts: dict[str, dict[str, int]] = {}
    total = 0
    for provider, n, n_live in session.execute(
        select(Worker.provider_name, func.count(), func.sum(live))
        .where(Worker.namespace_id == ns_id)
        .group_by(Worker.provider_name)
    ).all():
        counts[provider] = {"live": int(n_live or 0), "gone": int(n - (n_live or 0))}
        total += int(n)
    busy = _grouped(
        session,
        select(WorkItem.provider_name, func.count(func.distinct(WorkItem.worker_id)))
        .where(WorkItem.namespace_id == ns_id, WorkItem.state == "running")
        .group_by(WorkItem.provider_name),
    )
    for provider, n in busy.items():
        counts.setdefault(provider, {"live": 0, "gone": 0})["busy"] = n
    hb = getattr(state, "heartbeats", None)
    rows = session.execute(
        select(
            Worker.id,
            Worker.provider_name,
            Worker.instance_id,
            Worker.host,
            Worker.last_seen,
            Worker.polled_at,
            Worker.deregistered_at,
        )
        .where(Worker.namespace_id == ns_id)
        .order_by(Worker.last_seen.desc())
        .limit(SHOWN)
    ).all()
    out = []
    for row in rows:
        w = SimpleNamespace(**row._asdict())
        if hb is not None:
            hb.overlay_with(w)  # this server's beats not yet written
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
    return out, total, counts


def _lifecycle(observed: Any, at: datetime | None, now: datetime) -> dict[str, str]:
    """What dreamlake's watcher last published for a provider (the row's ``observed``
    document): the lifecycle status, the drift if any, and how long ago."""
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
    return {
        "status": str(observed.get("status") or "-"),
        "drift": text,
        "seen": age(at, now) if at is not None else "",
    }


def _providers(
    session: Any, ns_id: int, now: datetime, counts: dict[str, dict[str, int]]
) -> list[dict[str, Any]]:
    from sqlalchemy import select

    from ...registry.launchers import default_dispatch
    from ...registry.models import Provider

    cap = _capacity(session, ns_id, now)
    rows = session.execute(
        select(
            Provider.name,
            Provider.kind,
            Provider.config,
            Provider.observed,
            Provider.observed_at,
            Provider.updated_at,
        )
        .where(
            Provider.namespace_id == ns_id,
            Provider.hidden.is_(False),
            Provider.deleted_at.is_(None),
        )
        .order_by(Provider.name)
    ).all()
    out = []
    for name, kind, config, observed, observed_at, updated_at in rows:
        config = config if isinstance(config, dict) else {}
        kwargs = config.get("kwargs") if isinstance(config.get("kwargs"), dict) else {}
        n = counts.get(name, {})
        out.append(
            {
                "name": name,
                "launcher": kind,
                "dispatch": config.get("dispatch") or default_dispatch(kind),
                **_lifecycle(observed, observed_at, now),
                "live": n.get("live", 0),
                "gone": n.get("gone", 0),
                "busy": n.get("busy", 0),
                **cap(name, kind, kwargs, updated_at),
            }
        )
    return out


def _capacity(session: Any, ns_id: int, now: datetime) -> Any:
    """``(name, launcher, kwargs) → {offers, limit, leased, instances, backoff, error}``
    for the namespace's providers (nothing without the capacity module)."""
    from sqlalchemy import func, select

    try:
        from ...capacity import backoff
        from ...capacity.models import ACTIVE, CapacityLease
        from ...capacity.offers import OfferError, limit_of, offers_of
        from ...capacity.service import price_table
        from ...launch.models import Instance
    except ModuleNotFoundError:
        return lambda name, kind, kwargs, updated_at: {}
    table = price_table(session, ns_id)
    prices = json.dumps(table, sort_keys=True, default=str)
    offs = {p: b for p, b in backoff.of_namespace(session, ns_id).items() if b.until > now}
    leased = _grouped(
        session,
        select(CapacityLease.provider_name, func.count())
        .where(CapacityLease.namespace_id == ns_id, CapacityLease.state.in_(ACTIVE))
        .group_by(CapacityLease.provider_name),
    )
    launched = _grouped(
        session,
        select(Instance.provider_name, func.count())
        .where(Instance.namespace_id == ns_id, Instance.terminated_at.is_(None))
        .group_by(Instance.provider_name),
    )

    def static(name: str, kind: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            offers = offers_of(name, kind, kwargs, table)
            return {
                "offers": ", ".join(_offer(o.wire()) for o in offers),
                "limit": limit_of(kind, kwargs),
                "error": "",
            }
        except OfferError as exc:
            return {"offers": "-", "limit": None, "error": f"kwargs.capacity cannot be read: {exc}"}

    def of(name: str, kind: str, kwargs: dict[str, Any], updated_at: Any) -> dict[str, Any]:
        key = (ns_id, name, updated_at, prices)
        made = _OFFERS.get(key)
        if made is None:
            made = _OFFERS.put(key, static(name, kind, kwargs))
        return {
            **made,
            "leased": leased.get(name, 0),
            "instances": launched.get(name, 0),
            "backoff": offs[name].reason if name in offs else "",
        }

    return of


class _Kept:
    """What a provider row's offers read as, kept while the row (its ``updated_at``)
    and the namespace's prices stay the same; the least recently used beyond
    ``most`` are dropped."""

    def __init__(self, most: int = 4096) -> None:
        self.most = most
        self._items: OrderedDict[Any, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> dict[str, Any] | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: Any, value: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.most:
                self._items.popitem(last=False)
        return value


_OFFERS = _Kept()


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


def _queues(session: Any, state: Any, ns: Any) -> list[dict[str, Any]]:
    try:
        from ...queues import service as queues
        from ...registry import service as registry
    except ModuleNotFoundError:
        return []
    from ..deps import org_namespace_ids

    scope = registry.Scope(
        namespace=ns,
        org_ids=org_namespace_ids(session, ns),
        unscoped=bool(getattr(state, "unscoped_listings", True)),
    )
    out = []
    for q in queues.list_queues(session, scope):
        if q.get("namespace") not in (None, ns.name):
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


def _leases(session: Any, ns_id: int, now: datetime) -> tuple[list[dict[str, Any]], int]:
    from sqlalchemy import func, select

    try:
        from ...capacity.models import ACTIVE, CapacityLease
    except ModuleNotFoundError:
        return [], 0
    base = select(CapacityLease).where(CapacityLease.namespace_id == ns_id)
    open_states = (*ACTIVE, "pending")
    is_open = CapacityLease.state.in_(open_states)
    count = session.scalar(select(func.count()).where(CapacityLease.namespace_id == ns_id, is_open))
    open_rows = session.scalars(base.where(is_open).order_by(CapacityLease.expires_at).limit(SHOWN))
    ended = session.scalars(
        base.where(CapacityLease.state.not_in(open_states))
        .order_by(CapacityLease.updated_at.desc())
        .limit(ENDED_LEASES_SHOWN)
    )
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
                "expires": age(row.expires_at, now) if row.state in open_states else "",
                "reason": row.reason or "",
                "summary": str(decision.get("summary") or ""),
                "rejected": reasons,
            }
        )
    return out, int(count or 0)


def _instances(session: Any, ns_id: int, now: datetime) -> tuple[list[dict[str, Any]], int]:
    from sqlalchemy import func, select

    try:
        from ...launch.models import Instance
    except ModuleNotFoundError:
        return [], 0
    alive = (Instance.namespace_id == ns_id, Instance.terminated_at.is_(None))
    count = session.scalar(select(func.count()).select_from(Instance).where(*alive))
    rows = session.scalars(
        select(Instance).where(*alive).order_by(Instance.created_at.desc()).limit(SHOWN)
    )
    return [
        {
            "id": r.instance_id,
            "provider": r.provider_name,
            "launcher": r.launcher,
            "queue": r.queue or "",
            "state": r.state,
            "age": age(r.started_at or r.created_at, now),
        }
        for r in rows
    ], int(count or 0)
