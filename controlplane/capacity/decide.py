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

from .catalog import Catalog
from .offers import Offer
from .request import MAX_TTL, STRATEGIES, Request, RequestError

REASONS = ("not-allowed", "back-off", "does-not-fit", "price", "limit-reached", "outranked")


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


def _waste(req: Request, o: Offer) -> float:
    """The mean share left unused over the dimensions the offer states, added left to
    right (as ``_waste_column`` adds them, so both give the same bits)."""
    total, parts = 0.0, 0
    for want, have in (
        (req.cpus, o.cpus),
        (req.memory_gb, o.memory_gb),
        (float(req.accelerators), float(o.accelerators)),
    ):
        if have:
            total += (have - want) / have
            parts += 1
    return total / parts if parts else 0.0


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
# What a candidate offer comes to, in the order the checks run (the first that applies
# is its reason). ``_MISFIT`` is ``does-not-fit``, one sentence per failing value.
_MISFIT, _UNPRICED, _OVER, _FULL, _FITS = 1, 2, 3, 4, 5


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
    names none (a queue's providers). Offers not chosen are given in groups: one entry
    per provider, reason and sentence, naming its offers in the order they were given.
    A provider's entries follow the checks' order (its ``does-not-fit`` ones in the
    order first met); the ``outranked`` come after every provider's. An entry's
    ``offers`` list may be the catalog's own: read the document, do not change it."""
    import numpy as np

    catalog = offers if isinstance(offers, Catalog) else Catalog(offers)
    allowed = set(req.providers) if req.providers else None
    excluded = set(req.exclude)
    # per provider: its entries decided whole (a gate, other accelerators); for those
    # with candidates, the state, the launch refusal and the candidates' positions
    whole: dict[str, list[tuple[str, str, list[str]]]] = {}
    open_states: list[ProviderState] = []
    refusals: list[str | None] = []
    runs: list[Any] = []
    for p, slot in catalog.providers.items():
        st = states.get(p)
        gate = _provider_gate(p, st, allowed, excluded, now)
        if gate is not None:
            whole[p] = [(*gate, slot.names)]
            continue
        assert st is not None
        if req.accelerator is None:
            whole[p], run = [], slot.given
        else:
            elsewhere, run = slot.split(req.accelerator)
            whole[p] = list(elsewhere)
        if run is not None:
            open_states.append(st)
            refusals.append(_launch_refusal(st))
            runs.append(run)
    cand = np.concatenate(runs) if runs else np.zeros(0, dtype=np.intp)
    owner = np.repeat(np.arange(len(runs)), [len(r) for r in runs])
    code, sentence_of, misfit_ids = _checked(req, catalog, cand)
    idle = _idle(catalog, cand, open_states)
    refused = np.array([r is not None for r in refusals], dtype=bool)
    if refused.any():
        code[(code == _FITS) & refused[owner] & ~idle] = _FULL
    best, best_via = _best(req, catalog, cand, owner, code, idle, open_states, order)
    price_said = _price_sentences(req.max_price)
    counts = dict.fromkeys(REASONS, 0)
    rejected: list[dict[str, Any]] = []

    def entry(p: str, reason: str, detail: str, names: list[str]) -> None:
        counts[reason] += len(names)
        rejected.append({"provider": p, "offers": names, "reason": reason, "detail": detail})

    grouped = _grouped(catalog, cand, owner, code, misfit_ids)
    fitting: list[tuple[str, list[str]]] = []
    at = 0
    for p, mine in whole.items():
        for reason, detail, names in mine:
            entry(p, reason, detail, names)
        if at < len(open_states) and open_states[at].name == p:
            for c, sid, names in grouped.get(at, ()):
                if c == _FITS:
                    fitting.append((p, names))
                elif c == _MISFIT:
                    entry(p, "does-not-fit", sentence_of[sid], names)
                elif c == _FULL:
                    entry(p, "limit-reached", refusals[at] or "", names)
                else:
                    entry(p, "price", price_said[c], names)
            at += 1
    chosen: dict[str, Any] | None = None
    if best is not None:
        chosen = {**best.wire(), "via": best_via, "waste": round(_waste(req, best), 4)}
        ahead = f"fits; {best.provider}/{best.name} ranks first by {req.strategy}"
        for p, names in fitting:
            others = [n for n in names if n != best.name] if p == best.provider else names
            if others:
                entry(p, "outranked", ahead, others)
    return _document(req, now, catalog.count, chosen, counts, rejected)


def _document(
    req: Request,
    now: datetime,
    considered: int,
    chosen: dict[str, Any] | None,
    counts: Mapping[str, int],
    rejected: list[dict[str, Any]],
) -> dict[str, Any]:
    """The decision document around its parts (``schema.DECISION_SCHEMA``)."""
    return {
        "strategy": req.strategy,
        "request": req.wire(),
        "decidedAt": _iso(now),
        "considered": considered,
        "chosen": chosen,
        "summary": _summary(chosen, counts, considered),
        "rejectedBy": {k: v for k, v in counts.items() if v},
        "rejected": rejected,
    }


def _launch_refusal(st: ProviderState) -> str | None:
    """Why an offer of ``st`` with no idle worker cannot be launched now, if it cannot."""
    if not st.can_launch:
        return "no idle worker of this offer, and this provider cannot launch one"
    if st.limit is not None and st.instances >= st.limit:
        return (
            f"no idle worker of this offer, and {st.instances} of the "
            f"provider's limit of {st.limit} instance(s) are in use"
        )
    return None


def _price_sentences(max_price: float | None) -> dict[int, str]:
    if max_price is None:
        return {}
    return {
        _UNPRICED: (
            f"no price for this offer in any price table, and the request has a maximum "
            f"of {max_price:g}/h"
        ),
        _OVER: f"over the request's maximum of {max_price:g}/h",
    }


def _checked(req: Request, catalog: Catalog, cand: Any) -> tuple[Any, list[str], Any]:
    """Each candidate's code after the fit and price checks; the does-not-fit
    sentences, and each candidate's index into them (-1 where it fits)."""
    import numpy as np

    n = len(cand)
    code = np.full(n, _FITS, dtype=np.int8)
    misfit_ids = np.full(n, -1, dtype=np.int64)
    sentences: list[str] = []
    conds: list[tuple[int, Any, Any]] = []  # (kind, failing, the value said)
    if req.accelerators:
        have = catalog.accelerators[cand]
        conds.append((1, have < req.accelerators, have))
    if req.cpus:
        cpus = catalog.cpus[cand]
        conds.append((2, np.isnan(cpus), None))
        conds.append((3, cpus < req.cpus, catalog.cpu_ids[cand]))
    if req.memory_gb:
        mem = catalog.memory[cand]
        conds.append((4, np.isnan(mem), None))
        conds.append((5, mem < req.memory_gb, catalog.memory_ids[cand]))
    if req.spot is not None:
        conds.append((6, catalog.spot[cand] != req.spot, None))
    if conds:
        kind = np.select([c for _, c, _ in conds], [k for k, _, _ in conds], 0)
        failing = np.flatnonzero(kind)
        if failing.size:
            value = np.zeros(n, dtype=np.int64)
            for k, _, said in conds:
                if said is not None:
                    here = kind == k
                    value[here] = said[here]
            # (check, value) numbered in a small range; any one offer of each says
            # the sentence for all (the same check failing on the same value)
            span = int(value.max()) + 1
            combined = kind[failing].astype(np.int64) * span + value[failing]
            one_of = np.full(7 * span, -1, dtype=np.intp)
            one_of[combined] = failing
            ids: dict[str, int] = {}
            sid_of = np.zeros(7 * span, dtype=np.int64)
            for c in np.flatnonzero(one_of >= 0).tolist():
                said_ = _misfit(req, catalog.offers[int(cand[one_of[c]])]) or ""
                sid_of[c] = ids.setdefault(said_, len(ids))
            sentences = list(ids)
            code[failing] = _MISFIT
            misfit_ids[failing] = sid_of[combined]
    if req.max_price is not None:
        price = catalog.price[cand]
        fits = code == _FITS
        code[fits & np.isnan(price)] = _UNPRICED
        code[fits & (price > req.max_price)] = _OVER
    return code, sentences, misfit_ids


def _idle(catalog: Catalog, cand: Any, open_states: Sequence[ProviderState]) -> Any:
    """Which candidates have an idle worker of their offer."""
    import numpy as np

    marked = [
        pos
        for st in open_states
        for name, n in st.idle.items()
        if n > 0
        for pos in catalog.providers[st.name].positions(catalog).get(name, ())
    ]
    if not marked:
        return np.zeros(len(cand), dtype=bool)
    mark = np.zeros(catalog.count, dtype=bool)
    mark[marked] = True
    return mark[cand]


def _grouped(
    catalog: Catalog, cand: Any, owner: Any, code: Any, misfit_ids: Any
) -> dict[int, list[tuple[int, int, list[str]]]]:
    """The candidates in groups of one provider, code and sentence, each naming its
    offers in candidate order: per provider (by its index among the open ones), the
    does-not-fit groups in the order first met, then price, limit and fitting."""
    import numpy as np

    out: dict[int, list[tuple[int, int, list[str]]]] = {}
    if not len(cand):
        return out
    span = int(misfit_ids.max()) + 2
    key = (owner.astype(np.int64) * 8 + code) * span + (misfit_ids + 1)
    if key.max() < 1 << 16:
        key = key.astype(np.uint16)  # numpy sorts 16-bit keys stably by radix: faster
    perm = np.argsort(key, kind="stable")
    sorted_key = key[perm]
    starts = np.flatnonzero(np.concatenate(([True], sorted_key[1:] != sorted_key[:-1])))
    ends = np.append(starts[1:], len(perm))
    names = catalog.names[cand[perm]]
    rows = []
    bounds = zip(
        sorted_key[starts].tolist(), perm[starts].tolist(), starts.tolist(), ends.tolist(),
        strict=True,
    )  # fmt: skip
    for k, first, s, e in bounds:
        rest = k // span
        rows.append((rest // 8, rest % 8, first, k % span - 1, s, e))
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    for own, c, _first, sid, s, e in rows:
        out.setdefault(own, []).append((c, sid, names[s:e].tolist()))
    return out


def _best(
    req: Request,
    catalog: Catalog,
    cand: Any,
    owner: Any,
    code: Any,
    idle: Any,
    open_states: Sequence[ProviderState],
    order: Sequence[str],
) -> tuple[Offer | None, str]:
    """The offer the strategy ranks first among those that fit, and how it is served.
    The columns narrow the field to the offers tied on the strategy's first measures;
    the ranking itself is the one key below, over what is left."""
    import numpy as np

    fits = np.flatnonzero(code == _FITS)
    if not fits.size:
        return None, ""
    pos = cand[fits]
    own = owner[fits]
    price = catalog.price[pos]
    cost = np.where(np.isnan(price), _INF, price)
    rank_order = {p: i for i, p in enumerate(req.providers or order)}
    strategy = req.strategy
    keep = np.ones(len(fits), dtype=bool)

    def narrow(measure: Any) -> None:
        nonlocal keep
        keep &= measure == measure[keep].min()

    if strategy == "priority":
        narrow(np.array([rank_order.get(s.name, len(rank_order)) for s in open_states])[own])
        narrow(np.array([-s.priority for s in open_states])[own])
    elif strategy == "spread":
        narrow(np.array([s.load for s in open_states])[own])
    if strategy == "least-waste":
        waste = _waste_column(req, catalog, pos)
        keep &= waste <= waste.min() + 2e-9  # every offer whose waste may round as the least
        near = np.flatnonzero(keep)
        if len(near) > 1:  # the ranking's own rounding, then the cheapest of those
            rounded = np.array([round(w, 9) for w in waste[near].tolist()])
            keep[near[rounded != rounded.min()]] = False
            narrow(cost)
    else:
        narrow(cost)
        tied = np.flatnonzero(keep)
        if strategy == "cheapest" and len(tied) > 1:
            waste = _waste_column(req, catalog, pos[tied])
            keep[tied[waste > waste.min() + 1e-12]] = False
    best: tuple[Any, ...] | None = None
    best_offer: Offer | None = None
    best_via = ""
    for i in np.flatnonzero(keep).tolist():
        o = catalog.offers[int(pos[i])]
        st = open_states[int(own[i])]
        via = "idle" if idle[fits[i]] else "launch"
        c = float(cost[i])
        if strategy == "cheapest":
            head: tuple[Any, ...] = (c, _waste(req, o))
        elif strategy == "least-waste":
            head = (round(_waste(req, o), 9), c)
        elif strategy == "priority":
            head = (rank_order.get(st.name, len(rank_order)), -st.priority, c)
        else:
            head = (st.load, c)
        key = (*head, via != "idle", st.name, o.name)
        if best is None or key < best:
            best, best_offer, best_via = key, o, via
    return best_offer, best_via


def _waste_column(req: Request, catalog: Catalog, pos: Any) -> Any:
    """``_waste`` of every offer at ``pos`` at once (the same sums, in the same order)."""
    import numpy as np

    total = np.zeros(len(pos))
    parts = np.zeros(len(pos))
    for want, have in (
        (req.cpus, catalog.cpus[pos]),
        (req.memory_gb, catalog.memory[pos]),
        (float(req.accelerators), catalog.accelerators[pos].astype(float)),
    ):
        said = have > 0  # NaN (not said) and 0 count as not said, as in ``_waste``
        total += np.where(said, (have - want) / np.where(said, have, 1.0), 0.0)
        parts += said
    return np.where(parts > 0, total / np.maximum(parts, 1), 0.0)


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


__all__ = [
    "MAX_TTL",
    "REASONS",
    "STRATEGIES",
    "Catalog",
    "ProviderState",
    "Request",
    "RequestError",
    "decide",
    "pending_reason",
]
