"""The capacity picture of a namespace, read from the database in a handful of
queries: every provider the caller can see, its offers (priced), and its state —
live, idle and launching workers, the instance limit, current leases, back-off.

``snapshot`` feeds the pure decision (``decide``); ``listing`` is the
``GET …/capacity`` answer; ``prices`` / ``put_prices`` are the namespace's table.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..db import utcnow
from ..launch.dispatch import grows_workers
from ..launch.models import Instance
from ..models import Worker, WorkItem
from ..registry import service as registry
from ..registry.service.common import RegistryError, ns_names
from ..rowlock import begin_write
from ..server import store
from ..server.json_guard import refuse_nul
from . import backoff
from .decide import Catalog, ProviderState
from .models import ACTIVE, CapacityLease, CapacityPrices
from .offers import ANY_PROVIDER, Offer, OfferError, limit_of, offers_of, priority_of

MAX_PRICE_ENTRIES = 10_000


def _iso(dt: datetime | None) -> str | None:
    return dt.isoformat().replace("+00:00", "Z") if dt else None


@dataclass
class ProviderView:
    name: str
    launcher: str
    namespace: str
    local: bool
    """The provider row lives where the caller can launch on it (its namespace or org)."""
    dispatch: str = "daemon"
    offers: list[Offer] = field(default_factory=list)
    error: str | None = None
    limit: int | None = None
    priority: float = 0.0
    live: list[Worker] = field(default_factory=list)
    idle: list[Worker] = field(default_factory=list)
    launching: list[Instance] = field(default_factory=list)
    instances: int = 0
    leases: int = 0
    backoff_reason: str | None = None
    backoff_until: datetime | None = None
    backoff_failures: int = 0
    idle_by_offer: dict[str, list[Worker]] = field(default_factory=dict)
    made_of: Hashable = None
    """What ``offers`` were made from (the row as last updated, its price entries)."""

    def state(self) -> ProviderState:
        return ProviderState(
            name=self.name,
            limit=self.limit,
            instances=self.instances,
            idle={k: len(v) for k, v in self.idle_by_offer.items()},
            load=len(self.live) + self.leases,
            priority=self.priority,
            backoff_until=self.backoff_until,
            backoff_reason=self.backoff_reason,
            # a launch leaves a worker only where the dispatch leaves a daemon
            can_launch=self.local and self.error is None and grows_workers(self.dispatch),
        )


@dataclass
class Snapshot:
    now: datetime
    providers: dict[str, ProviderView]

    def offers(self) -> list[Offer]:
        return [o for v in self.providers.values() for o in v.offers]

    def catalog(self) -> Catalog:
        """``offers()`` laid out for deciding, kept while the provider rows and their
        prices stay as they are, so a namespace of 100,000 offers is laid out once,
        not on every lease or placement."""
        made_of = tuple(v.made_of for v in self.providers.values())
        return _kept(_CATALOGS, made_of, lambda: Catalog(self.offers()), KEPT_CATALOGS)

    def states(self) -> dict[str, ProviderState]:
        return {n: v.state() for n, v in self.providers.items()}


# Offers and catalogs kept between requests, keyed by what they were made from; each
# replica keeps its own (the key is read from the database, so all agree).
KEPT_PROVIDERS = 1024
KEPT_CATALOGS = 16
_OFFERS: OrderedDict[Hashable, list[Offer]] = OrderedDict()
_CATALOGS: OrderedDict[Hashable, Catalog] = OrderedDict()
_KEPT_LOCK = threading.Lock()
_T = TypeVar("_T")


def _kept(store: OrderedDict[Hashable, _T], key: Hashable, make: Callable[[], _T], most: int) -> _T:
    """``store[key]``, made (outside the lock) when missing; the least recently used
    beyond ``most`` are dropped."""
    with _KEPT_LOCK:
        got = store.get(key)
        if got is not None:
            store.move_to_end(key)
            return got
    made = make()
    with _KEPT_LOCK:
        store[key] = made
        while len(store) > most:
            store.popitem(last=False)
    return made


def _priced_offers(
    wire: Mapping[str, Any], table: Mapping[str, Any]
) -> tuple[Hashable, list[Offer]]:
    """A provider row's offers, kept while the row (its ``updatedAt``) and the price
    entries that can price it stay the same."""
    name = wire["name"]
    entries = {k: table[k] for k in (name, ANY_PROVIDER) if k in table}
    key = (
        wire["namespace"],
        name,
        wire["launcher"],
        wire.get("updatedAt"),
        json.dumps(entries, sort_keys=True, default=str),
    )
    kwargs = wire.get("kwargs") or {}
    made = _kept(
        _OFFERS, key, lambda: offers_of(name, wire["launcher"], kwargs, table), KEPT_PROVIDERS
    )
    return key, made


def price_table(session: Session, ns_id: int) -> dict[str, Any]:
    row = session.get(CapacityPrices, ns_id)
    return dict(row.prices or {}) if row is not None else {}


def expire(session: Session, ns_id: int | None = None, now: datetime | None = None) -> list[str]:
    """End every lease past its expiry (granted or pending), freeing its slot at once
    (committed). Returns the ids that ended here, so the caller can terminate the
    instances launched for them."""
    now = now or utcnow()
    q = select(CapacityLease.id).where(
        CapacityLease.state.in_((*ACTIVE, "pending")), CapacityLease.expires_at < now
    )
    if ns_id is not None:
        q = q.where(CapacityLease.namespace_id == ns_id)
    ids = list(session.scalars(q.limit(1000)))
    ended: list[str] = []
    for lid in ids:
        res = session.execute(
            update(CapacityLease)
            .where(CapacityLease.id == lid, CapacityLease.state.in_((*ACTIVE, "pending")))
            .values(state="expired", slot=None, ended_at=now, reason="the lease ran out")
            .execution_options(synchronize_session=False)
        )
        if res.rowcount == 1:  # type: ignore[attr-defined]
            ended.append(lid)
    session.commit()
    return ended


@dataclass(frozen=True)
class Held:
    """What the granted and launching leases of a namespace hold: workers they were
    granted on, and instances launched for them (the daemon there is held too)."""

    workers: frozenset[str]
    instances: frozenset[tuple[str, str]]

    def __contains__(self, worker: object) -> bool:
        """Whether ``worker`` (a stored worker, or a copy with its beats applied) is held."""
        wid = getattr(worker, "id", None)
        unit = (getattr(worker, "provider_name", None), getattr(worker, "instance_id", None))
        return wid in self.workers or unit in self.instances


def held(session: Session, ns_id: int) -> Held:
    """What leases hold in the namespace; a lease holds its unit until ``expire`` ends
    it and frees the slot."""
    rows = session.execute(
        select(
            CapacityLease.worker_id,
            CapacityLease.provider_name,
            CapacityLease.instance_id,
            CapacityLease.launched,
        ).where(CapacityLease.namespace_id == ns_id, CapacityLease.state.in_(ACTIVE))
    ).all()
    return Held(
        frozenset(w for w, _, _, _ in rows if w),
        frozenset((p, i) for _, p, i, launched in rows if launched and p and i),
    )


def _offer_of(view: ProviderView, worker: Worker, launched: Mapping[str, Instance]) -> str | None:
    if not view.offers:
        return None
    inst = launched.get(worker.instance_id)
    if inst is not None and isinstance(inst.details, dict) and inst.details.get("offer"):
        return str(inst.details["offer"])
    names = [o.name for o in view.offers]
    for candidate in (worker.instance_id, worker.host):
        if candidate in names:
            return candidate
        for n in names:  # an SSH host label user@host:port holds the offer's host
            if candidate and (candidate.startswith(n + ":") or candidate.endswith("@" + n)):
                return n
    return names[0]


def snapshot(
    session: Session,
    scope: registry.Scope,
    live_seconds: float,
    overlay: Any = None,
    *,
    only: Sequence[str] | None = None,
    now: datetime | None = None,
) -> Snapshot:
    now = now or utcnow()
    ns_id = scope.namespace.id
    wires = registry.list_providers(session, scope)
    if only is not None:
        wanted = set(only)
        wires = [w for w in wires if w["name"] in wanted]
    table = price_table(session, ns_id)
    local_ns = set(ns_names(session, scope.lookup_ids).values())
    views: dict[str, ProviderView] = {}
    for wire in wires:
        name = wire["name"]
        # the same name in another namespace: the caller's own wins
        if name in views and wire["namespace"] != scope.namespace.name:
            continue
        view = ProviderView(
            name=name,
            launcher=wire["launcher"],
            namespace=wire["namespace"],
            local=wire["namespace"] in local_ns,
            dispatch=str(wire.get("dispatch") or "daemon"),
        )
        if wire.get("unreadable"):
            view.error = wire["unreadable"]
        else:
            try:
                kwargs = wire.get("kwargs") or {}
                view.made_of, view.offers = _priced_offers(wire, table)
                view.limit = limit_of(wire["launcher"], kwargs)
                view.priority = priority_of(kwargs)
            except OfferError as exc:
                view.error = f"kwargs.capacity cannot be read: {exc}"
        views[name] = view
    names = list(views)
    if not names:
        return Snapshot(now, views)
    instances = session.scalars(
        select(Instance).where(
            Instance.namespace_id == ns_id,
            Instance.provider_name.in_(names),
            Instance.terminated_at.is_(None),
        )
    ).all()
    by_iid: dict[tuple[str, str], Instance] = {
        (i.provider_name, i.instance_id): i for i in instances
    }
    workers = session.scalars(
        select(Worker).where(
            Worker.namespace_id == ns_id,
            Worker.provider_name.in_(names),
            Worker.deregistered_at.is_(None),
        )
    ).all()
    look = overlay or (lambda w: w)
    live = [w for w in workers if store.is_live(look(w), live_seconds, now)]
    busy = set(
        session.scalars(
            select(WorkItem.worker_id).where(
                WorkItem.namespace_id == ns_id, WorkItem.state == "running"
            )
        )
    )
    leases = session.execute(
        select(CapacityLease.provider_name, CapacityLease.worker_id, CapacityLease.state).where(
            CapacityLease.namespace_id == ns_id,
            # a lease holds its unit until ``expire`` ends it and frees the slot
            CapacityLease.state.in_(ACTIVE),
        )
    ).all()
    leased = held(session, ns_id)
    launching_leases: dict[str, int] = {}
    for p, _wid, st in leases:
        if p in views:
            views[p].leases += 1
        if st == "launching" and p:
            launching_leases[p] = launching_leases.get(p, 0) + 1
    offs = backoff.of_namespace(session, ns_id)
    for name, view in views.items():
        mine = [i for i in instances if i.provider_name == name]
        view.live = [w for w in live if w.provider_name == name]
        claimed = {w.instance_id for w in view.live}
        view.launching = [
            i for i in mine if i.instance_id not in claimed and i.state not in _ASLEEP
        ]
        view.instances = units(view.launcher, mine, view.live) + launching_leases.get(name, 0)
        launched = {iid: i for (p, iid), i in by_iid.items() if p == name}
        for w in view.live:
            if w.id in busy or w in leased:
                continue
            view.idle.append(w)
            offer = _offer_of(view, w, launched)
            if offer is not None:
                view.idle_by_offer.setdefault(offer, []).append(w)
        b = offs.get(name)
        if b is not None and b.until > now:
            view.backoff_reason, view.backoff_until, view.backoff_failures = (
                b.reason,
                b.until,
                b.failures,
            )
    return Snapshot(now, views)


_ASLEEP = ("suspended", "stopped", "stopping")


def units(launcher: str, rows: Sequence[Instance], live: Sequence[Worker]) -> int:
    """The units of a provider's limit held now: every launched instance and every
    live worker holds one (a daemon's worker and its instance are one unit). On an
    SSH pool a unit is a host: a direct run there and the host's daemon are one."""
    from ..launchers.ssh import host_label

    held = {i.instance_id for i in rows} | {w.instance_id for w in live}
    if launcher == "SSH":
        held = {host_label(u) for u in held}
    return len(held)


def provider_wire(view: ProviderView) -> dict[str, Any]:
    return {
        "name": view.name,
        "namespace": view.namespace,
        "launcher": view.launcher,
        "launchable": view.local,
        "dispatch": view.dispatch,
        "offers": [o.wire() for o in view.offers],
        "error": view.error,
        "workers": {
            "live": len(view.live),
            "idle": len(view.idle),
            "launching": len(view.launching),
        },
        "instances": view.instances,
        "limit": view.limit,
        "priority": view.priority,
        "leases": view.leases,
        "backoff": None
        if view.backoff_until is None
        else {
            "reason": view.backoff_reason,
            "until": _iso(view.backoff_until),
            "failures": view.backoff_failures,
        },
    }


def listing(
    session: Session, scope: registry.Scope, live_seconds: float, overlay: Any = None
) -> dict[str, Any]:
    expire(session, scope.namespace.id)
    snap = snapshot(session, scope, live_seconds, overlay)
    return {
        "namespace": scope.namespace.name,
        "at": _iso(snap.now),
        "providers": [provider_wire(v) for v in snap.providers.values()],
    }


def prices(session: Session, scope: registry.Scope) -> dict[str, Any]:
    row = session.get(CapacityPrices, scope.namespace.id)
    return {
        "namespace": scope.namespace.name,
        "prices": dict(row.prices or {}) if row else {},
        "updatedAt": _iso(row.updated_at) if row else None,
    }


def put_prices(session: Session, scope: registry.Scope, body: Mapping[str, Any]) -> dict[str, Any]:
    """Replace the namespace's price table: ``{"prices": {provider|"*": {offer: price}}}``."""
    try:
        refuse_nul(body)
    except ValueError as exc:
        raise RegistryError(422, "validation_error", str(exc)) from None
    if set(body) - {"prices"} or not isinstance(body.get("prices"), dict):
        raise RegistryError(
            422,
            "validation_error",
            'the body is {"prices": {PROVIDER or "*": {OFFER: PRICE_PER_HOUR}}}',
        )
    table = body["prices"]
    count = 0
    for provider, entries in table.items():
        if not isinstance(entries, dict):
            raise RegistryError(
                422, "validation_error", f"prices.{provider} must map offer names to prices"
            )
        for offer, price in entries.items():
            count += 1
            if isinstance(price, bool) or not isinstance(price, int | float) or price < 0:
                raise RegistryError(
                    422,
                    "validation_error",
                    f"prices.{provider}.{offer} must be a price per hour (a number ≥ 0)",
                )
    if count > MAX_PRICE_ENTRIES:
        raise RegistryError(
            422, "validation_error", f"a price table holds at most {MAX_PRICE_ENTRIES} prices"
        )
    for attempt in (1, 2):  # a first table written meanwhile: the second try updates it
        begin_write(session)
        row = session.get(CapacityPrices, scope.namespace.id, with_for_update=True)
        if row is None:
            row = CapacityPrices(namespace_id=scope.namespace.id)
            session.add(row)
        row.prices = table
        row.updated_at = utcnow()
        try:
            session.commit()
            break
        except IntegrityError:
            session.rollback()
            if attempt == 2:
                raise RegistryError(
                    409, "conflict", "the price table changed meanwhile; send it again"
                ) from None
    return prices(session, scope)
