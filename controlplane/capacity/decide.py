"""The placement decision: which offer serves a request, and for every other offer
why not. Pure (no I/O, no clock but the ``now`` it is given), so the same inputs
give the same document, on any replica.

An offer is **available** when an idle worker of it is free (``via: idle``) or its
provider is under its instance limit (``via: launch``). Among the available offers
that fit, the request's strategy ranks:

* ``cheapest``    lowest price per hour (unknown prices last), then least waste;
* ``priority``    the order the request (or queue) names its providers, then the
                  provider's ``capacity.priority`` (higher first), then cheapest;
* ``spread``      the provider holding the fewest live workers and leases, then cheapest;
* ``least-waste`` the smallest share of the offer's CPUs, memory and accelerators
                  left unused, then cheapest.

Ties go to an idle worker over a launch, then by provider and offer name. Every offer
not chosen carries one reason: ``not-allowed``, ``back-off``, ``does-not-fit``,
``price``, ``limit-reached`` (checked in that order) or ``outranked``; the document
groups the offers that share a provider, a reason and its sentence into one entry,
so a decision over a hundred thousand offers stays a document of a few hundred.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .offers import Offer

STRATEGIES = ("cheapest", "priority", "spread", "least-waste")
REASONS = ("not-allowed", "back-off", "does-not-fit", "price", "limit-reached", "outranked")
DEFAULT_TTL = 3600.0
MAX_TTL = 7 * 24 * 3600.0
REQUEST_FIELDS = (
    "accelerator",
    "accelerators",
    "cpus",
    "memoryGb",
    "maxPricePerHour",
    "spot",
    "providers",
    "excludeProviders",
    "strategy",
    "ttlSeconds",
)


class RequestError(ValueError):
    """A request that cannot be read: the sentence says which field and why."""


@dataclass(frozen=True, slots=True)
class Request:
    accelerator: str | None = None
    accelerators: int = 0
    cpus: float = 0.0
    memory_gb: float = 0.0
    max_price: float | None = None
    spot: bool | None = None
    providers: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    strategy: str = "cheapest"
    ttl: float = DEFAULT_TTL

    @classmethod
    def from_wire(cls, body: Mapping[str, Any], **defaults: Any) -> Request:
        if not isinstance(body, Mapping):
            raise RequestError("the request must be a JSON object")
        unknown = sorted(set(body) - set(REQUEST_FIELDS))
        if unknown:
            raise RequestError(
                f"unknown field(s) {', '.join(unknown)}; a request has {', '.join(REQUEST_FIELDS)}"
            )
        merged = {**defaults, **body}
        acc = merged.get("accelerator")
        if acc is not None and (not isinstance(acc, str) or not acc or len(acc) > 63):
            raise RequestError("accelerator must name an accelerator (e.g. A10G)")
        count = merged.get("accelerators", 1 if acc else 0)
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 1024:
            raise RequestError("accelerators must be a whole number from 0 to 1024")
        strategy = merged.get("strategy") or "cheapest"
        if strategy not in STRATEGIES:
            raise RequestError(f"strategy must be one of {', '.join(STRATEGIES)}")
        spot = merged.get("spot")
        if spot is not None and not isinstance(spot, bool):
            raise RequestError("spot must be true, false or null (either)")
        ttl = _number(merged.get("ttlSeconds"), "ttlSeconds", DEFAULT_TTL)
        if not 1 <= ttl <= MAX_TTL:
            raise RequestError(f"ttlSeconds must be from 1 to {MAX_TTL:.0f}")
        max_price = merged.get("maxPricePerHour")
        return cls(
            accelerator=acc,
            accelerators=count,
            cpus=_number(merged.get("cpus"), "cpus", 0.0),
            memory_gb=_number(merged.get("memoryGb"), "memoryGb", 0.0),
            max_price=None if max_price is None else _number(max_price, "maxPricePerHour", 0.0),
            spot=spot,
            providers=_names(merged.get("providers"), "providers"),
            exclude=_names(merged.get("excludeProviders"), "excludeProviders"),
            strategy=strategy,
            ttl=ttl,
        )

    def wire(self) -> dict[str, Any]:
        return {
            "accelerator": self.accelerator,
            "accelerators": self.accelerators,
            "cpus": self.cpus,
            "memoryGb": self.memory_gb,
            "maxPricePerHour": self.max_price,
            "spot": self.spot,
            "providers": list(self.providers),
            "excludeProviders": list(self.exclude),
            "strategy": self.strategy,
            "ttlSeconds": self.ttl,
        }


def _number(v: Any, what: str, default: float) -> float:
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0 or v != v:
        raise RequestError(f"{what} must be a number ≥ 0")
    return float(v)


def _names(v: Any, what: str) -> tuple[str, ...]:
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v) or len(v) > 1000:
        raise RequestError(f"{what} must be a list of provider names")
    return tuple(dict.fromkeys(v))


@dataclass(frozen=True, slots=True)
class ProviderState:
    """What the decision needs to know of one provider right now."""

    name: str
    limit: int | None = None
    instances: int = 0
    """Live instances counting against ``limit``, leased ones included."""
    idle: Mapping[str, int] = field(default_factory=dict)
    """Free workers by offer name (live, nothing running, no lease)."""
    load: int = 0
    """Live workers plus active leases (the ``spread`` strategy's measure)."""
    priority: float = 0.0
    backoff_until: datetime | None = None
    backoff_reason: str | None = None
    can_launch: bool = True


class Catalog:
    """The offers grouped for deciding: by provider, and within a provider by
    accelerator, in the order given. Build it once for as long as the offers stay
    the same (a price table or a provider's ``capacity`` changes them); ``decide``
    builds one itself from a plain list."""

    __slots__ = ("count", "providers")

    def __init__(self, offers: Iterable[Offer]) -> None:
        self.providers: dict[str, _Offers] = {}
        count = 0
        mine: _Offers | None = None
        for o in offers:
            count += 1
            if mine is None or mine.provider != o.provider:
                mine = self.providers.get(o.provider)
                if mine is None:
                    mine = self.providers[o.provider] = _Offers(o.provider)
            mine.names.append(o.name)
            mine.offers.append(o)
        self.count = count


class _Offers:
    """One provider's offers: all names, and (names, offers, spelling) per accelerator
    (grouped the first time a request names an accelerator)."""

    __slots__ = ("_by_accelerator", "names", "offers", "provider")

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.names: list[str] = []
        self.offers: list[Offer] = []
        self._by_accelerator: dict[str | None, tuple[list[str], list[Offer], str | None]] = {}

    def by_accelerator(self) -> dict[str | None, tuple[list[str], list[Offer], str | None]]:
        if not self._by_accelerator and self.offers:
            for o in self.offers:
                key = o.accelerator.lower() if o.accelerator is not None else None
                group = self._by_accelerator.get(key)
                if group is None:
                    group = self._by_accelerator[key] = ([], [], o.accelerator)
                group[0].append(o.name)
                group[1].append(o)
        return self._by_accelerator


def _waste(req: Request, o: Offer) -> float:
    parts = []
    for want, have in (
        (req.cpus, o.cpus),
        (req.memory_gb, o.memory_gb),
        (float(req.accelerators), float(o.accelerators)),
    ):
        if have:
            parts.append((have - want) / have)
    return sum(parts) / len(parts) if parts else 0.0


def _misfit(req: Request, o: Offer) -> str | None:
    """Why ``o`` cannot serve ``req`` (its accelerator aside, which the catalog
    groups by), the same sentence for every offer that fails the same way."""
    if req.accelerators > o.accelerators:
        return f"wants {req.accelerators} accelerator(s), offers {o.accelerators}"
    if req.cpus:
        if o.cpus is None:
            return f"wants {req.cpus:g} CPUs, the offer does not say how many"
        if o.cpus < req.cpus:
            return f"wants {req.cpus:g} CPUs, offers {o.cpus:g}"
    if req.memory_gb:
        if o.memory_gb is None:
            return f"wants {req.memory_gb:g} GB, the offer does not say how much"
        if o.memory_gb < req.memory_gb:
            return f"wants {req.memory_gb:g} GB memory, offers {o.memory_gb:g}"
    if req.spot is not None and o.spot != req.spot:
        return "wants spot capacity" if req.spot else "wants on-demand capacity"
    return None


def _iso(dt: datetime) -> str:
    return dt.isoformat().replace("+00:00", "Z")


_INF = float("inf")


def decide(
    req: Request,
    offers: Iterable[Offer] | Catalog,
    states: Mapping[str, ProviderState],
    now: datetime,
    *,
    order: Sequence[str] = (),
) -> dict[str, Any]:
    """The decision document (see ``schema.DECISION_SCHEMA``).

    ``order`` is the provider order of the ``priority`` strategy when the request
    names none (a queue's providers). Offers not chosen are given in groups: one
    entry per provider, reason and sentence, naming every offer it covers."""
    catalog = offers if isinstance(offers, Catalog) else Catalog(offers)
    allowed = set(req.providers) if req.providers else None
    excluded = set(req.exclude)
    rank_order = {p: i for i, p in enumerate(req.providers or order)}
    strategy = req.strategy
    max_price = req.max_price
    want = req.accelerator.lower() if req.accelerator is not None else None
    checks = bool(req.accelerators or req.cpus or req.memory_gb or req.spot is not None)
    no_price = over_price = ""
    if max_price is not None:
        no_price = (
            f"no price for this offer in any price table, and the request has a maximum "
            f"of {max_price:g}/h"
        )
        over_price = f"over the request's maximum of {max_price:g}/h"
    best_cost = _INF
    groups: dict[tuple[str, str, str], list[str]] = {}
    fitting: dict[str, list[str]] = {}
    best: tuple[Any, ...] | None = None
    best_offer: Offer | None = None
    best_via = ""
    for p, mine in catalog.providers.items():
        st = states.get(p)
        gate = _provider_gate(p, st, allowed, excluded, now)
        if gate is not None:
            groups.setdefault((p, *gate), []).extend(mine.names)
            continue
        assert st is not None
        if want is None:
            candidates = mine.offers
        else:
            candidates = []
            for acc, (names, of_acc, spelling) in mine.by_accelerator().items():
                if acc == want:
                    candidates = of_acc
                else:
                    why = f"wants {req.accelerator}, offers {spelling or 'no accelerator'}"
                    groups.setdefault((p, "does-not-fit", why), []).extend(names)
        idle = st.idle
        launch_refusal: str | None = None
        if not st.can_launch:
            launch_refusal = "no idle worker of this offer, and this provider cannot launch one"
        elif st.limit is not None and st.instances >= st.limit:
            launch_refusal = (
                f"no idle worker of this offer, and {st.instances} of the "
                f"provider's limit of {st.limit} instance(s) are in use"
            )
        if strategy == "priority":
            head: tuple[Any, ...] = (rank_order.get(p, len(rank_order)), -st.priority)
        elif strategy == "spread":
            head = (st.load,)
        else:
            head = ()
        fits: list[str] = []
        unpriced: list[str] = []
        over: list[str] = []
        full: list[str] = []
        for o in candidates:
            misfit = _misfit(req, o) if checks else None
            if misfit is not None:
                groups.setdefault((p, "does-not-fit", misfit), []).append(o.name)
                continue
            price = o.price
            if max_price is not None:
                if price is None:
                    unpriced.append(o.name)
                    continue
                if price > max_price:
                    over.append(o.name)
                    continue
            if idle and idle.get(o.name, 0) > 0:
                via = "idle"
            elif launch_refusal is not None:
                full.append(o.name)
                continue
            else:
                via = "launch"
            fits.append(o.name)
            cost = price if price is not None else _INF
            if strategy == "cheapest":
                # the waste breaks a tie on price only: worked out only for a contender
                if cost > best_cost:
                    continue
                key: tuple[Any, ...] = (cost, _waste(req, o))
            elif strategy == "least-waste":
                key = (round(_waste(req, o), 9), cost)
            else:
                key = (*head, cost)
            key = (*key, via != "idle", p, o.name)
            if best is None or key < best:
                best, best_offer, best_via = key, o, via
                best_cost = cost
        for names, reason, said in (
            (unpriced, "price", no_price),
            (over, "price", over_price),
            (full, "limit-reached", launch_refusal or ""),
        ):
            if names:
                groups.setdefault((p, reason, said), []).extend(names)
        if fits:
            fitting[p] = fits
    chosen: dict[str, Any] | None = None
    if best_offer is not None:
        chosen = {
            **best_offer.wire(),
            "via": best_via,
            "waste": round(_waste(req, best_offer), 4),
        }
        ahead = f"fits; {best_offer.provider}/{best_offer.name} ranks first by {strategy}"
        for p, names in fitting.items():
            others = (
                [n for n in names if n != best_offer.name] if p == best_offer.provider else names
            )
            if others:
                groups.setdefault((p, "outranked", ahead), []).extend(others)
    counts = dict.fromkeys(REASONS, 0)
    rejected = []
    for (p, reason, detail), names in groups.items():
        counts[reason] += len(names)
        rejected.append({"provider": p, "offers": names, "reason": reason, "detail": detail})
    considered = catalog.count
    return {
        "strategy": strategy,
        "request": req.wire(),
        "decidedAt": _iso(now),
        "considered": considered,
        "chosen": chosen,
        "summary": _summary(chosen, counts, considered),
        "rejectedBy": {k: v for k, v in counts.items() if v},
        "rejected": rejected,
    }


def _provider_gate(
    p: str,
    st: ProviderState | None,
    allowed: set[str] | None,
    excluded: set[str],
    now: datetime,
) -> tuple[str, str] | None:
    if p in excluded:
        return ("not-allowed", "the request excludes this provider")
    if allowed is not None and p not in allowed:
        return ("not-allowed", "the request names other providers")
    if st is None:
        return ("not-allowed", "the caller cannot see this provider")
    if st.backoff_until is not None and st.backoff_until > now:
        return (
            "back-off",
            f"a launch was refused ({st.backoff_reason or 'capacity'}); "
            f"not asked again before {_iso(st.backoff_until)}",
        )
    return None


def _summary(chosen: dict[str, Any] | None, counts: Mapping[str, int], n: int) -> str:
    if chosen is not None:
        how = "an idle worker" if chosen["via"] == "idle" else "a new instance"
        price = chosen["pricePerHour"]
        cost = f" at {price:g}/h" if price is not None else ""
        return f"{chosen['provider']}/{chosen['offer']}{cost} on {how}, best of {n} offer(s)"
    if n == 0:
        return "no offers: no provider the caller can see has any"
    parts = [f"{v} {k}" for k, v in counts.items() if v]
    return f"none of {n} offer(s) can serve now: " + ", ".join(parts)


def pending_reason(decision: Mapping[str, Any]) -> str:
    """One sentence on why nothing was chosen (for a pending lease)."""
    return str(decision.get("summary") or "no offer can serve now")
