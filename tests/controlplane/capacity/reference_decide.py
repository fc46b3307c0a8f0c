"""The placement decision as a plain loop over every offer, as it was first written:
the reference the vectorised ``decide`` must agree with, offer for offer and entry for
entry (``test_decide_matches_the_reference``). A test oracle, not product code."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from dreamlake.controlplane.capacity.decide import (
    REASONS,
    ProviderState,
    Request,
    _document,
    _misfit,
    _provider_gate,
    _waste,
)
from dreamlake.controlplane.capacity.offers import Offer

_INF = float("inf")


class _Offers:
    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.names: list[str] = []
        self.offers: list[Offer] = []

    def by_accelerator(self) -> dict[str | None, tuple[list[str], list[Offer], str | None]]:
        out: dict[str | None, tuple[list[str], list[Offer], str | None]] = {}
        for o in self.offers:
            key = o.accelerator.lower() if o.accelerator is not None else None
            group = out.get(key)
            if group is None:
                group = out[key] = ([], [], o.accelerator)
            group[0].append(o.name)
            group[1].append(o)
        return out


class _Catalog:
    def __init__(self, offers: Iterable[Offer]) -> None:
        self.providers: dict[str, _Offers] = {}
        self.count = 0
        for o in offers:
            self.count += 1
            mine = self.providers.get(o.provider)
            if mine is None:
                mine = self.providers[o.provider] = _Offers(o.provider)
            mine.names.append(o.name)
            mine.offers.append(o)


def reference_decide(
    req: Request,
    offers: Iterable[Offer],
    states: Mapping[str, ProviderState],
    now: datetime,
    *,
    order: Sequence[str] = (),
) -> dict[str, Any]:
    """The decision document (see ``schema.DECISION_SCHEMA``).

    ``order`` is the provider order of the ``priority`` strategy when the request
    names none (a queue's providers). Offers not chosen are given in groups: one
    entry per provider, reason and sentence, naming every offer it covers."""
    catalog = _Catalog(offers)
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
    return _document(req, now, catalog.count, chosen, counts, rejected)
