"""A placement decision over many providers and offers: p50/p99 of ``decide()``.

    .venv/bin/python benchmarks/capacity_decide.py [--providers 100] [--offers 1000]
        [--per-provider] [--runs 200] [--strategy cheapest]

``--offers`` is the total over all providers (100 providers x 10 offers each by
default); ``--per-provider`` makes it per provider instead (100 x 1,000 = 100,000
offers). Each run builds the full decision document: the chosen offer and a reason
for every other one (grouped by provider, reason and sentence, as the document
gives them). Mixed states: some providers in back-off, some at their limit, some
with idle workers, a third of the offers priced over the maximum.

Timed three ways: the decision over a ``Catalog`` built once (the offers laid out by
provider and accelerator as columns, which the server keeps while the provider rows
and prices stay the same: ``service.Snapshot.catalog``); building that catalog; and
``decide`` handed the plain list, which builds one each time.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from dreamlake.controlplane.capacity.decide import Catalog, ProviderState, Request, decide
from dreamlake.controlplane.capacity.offers import Offer


def build(providers: int, per: int, seed: int = 7) -> tuple[list[Offer], dict[str, ProviderState]]:
    rnd = random.Random(seed)
    now = datetime.now(UTC)
    offers: list[Offer] = []
    states: dict[str, ProviderState] = {}
    accs = ["A10G", "A100", "H100", "L4", None]
    for p in range(providers):
        name = f"prv-{p:03d}"
        for o in range(per):
            acc = accs[o % len(accs)]
            offers.append(
                Offer(
                    provider=name,
                    name=f"type-{o}",
                    launcher="EC2",
                    accelerator=acc,
                    accelerators=(1 + o % 8) if acc else 0,
                    cpus=float(2 ** (1 + o % 7)),
                    memory_gb=float(4 * 2 ** (o % 7)),
                    region=f"r-{p % 5}",
                    spot=o % 3 == 0,
                    price=round(rnd.uniform(0.05, 40.0), 3),
                )
            )
        states[name] = ProviderState(
            name,
            limit=10,
            instances=10 if p % 7 == 0 else p % 10,
            idle={f"type-{p % per}": 1} if p % 5 == 0 else {},
            load=p % 13,
            priority=float(p % 4),
            backoff_until=now + timedelta(minutes=1) if p % 11 == 0 else None,
            backoff_reason="InsufficientInstanceCapacity" if p % 11 == 0 else None,
        )
    return offers, states


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--providers", type=int, default=100)
    ap.add_argument("--offers", type=int, default=1000)
    ap.add_argument("--per-provider", action="store_true")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--strategy", default="cheapest")
    args = ap.parse_args()
    per = args.offers if args.per_provider else max(1, args.offers // args.providers)
    offers, states = build(args.providers, per)
    catalog = Catalog(offers)  # held while the offers stay the same, as a server would
    # as the server does (controlplane/server/fleet/gcpolicy.py): what is alive moves to
    # the permanent generation, so a collection does not walk the offers every run
    gc.collect()
    gc.freeze()
    req = Request.from_wire(
        {"accelerator": "A10G", "cpus": 4, "maxPricePerHour": 25.0, "strategy": args.strategy}
    )
    now = datetime.now(UTC)
    for _ in range(5):
        decide(req, catalog, states, now)
    doc: dict[str, Any] = {}
    runs: dict[str, tuple[list[float], list[float]]] = {}

    def timed(label: str, n: int, fn: Any) -> Any:
        wall, cpu = runs.setdefault(label, ([], []))
        out = None
        for _ in range(n):
            t, c = time.perf_counter(), time.thread_time()
            out = fn()
            cpu.append((time.thread_time() - c) * 1000)
            wall.append((time.perf_counter() - t) * 1000)
        return out

    doc = timed("decision (catalog built)", args.runs, lambda: decide(req, catalog, states, now))
    few = max(5, args.runs // 10)
    timed("building the catalog", few, lambda: Catalog(offers))
    timed("decision from the list", few, lambda: decide(req, offers, states, now))
    print(
        f"{args.providers} providers x {per} offers = {len(offers)} offers, "
        f"strategy {args.strategy}, load {os.getloadavg()[0]:.1f}:"
    )
    for label, (wall, cpu) in runs.items():
        print(f"  {label} ({len(wall)} runs):")
        for kind, xs in (("wall", wall), ("cpu", cpu)):
            xs.sort()
            p99 = xs[min(len(xs) - 1, int(len(xs) * 0.99))]
            print(
                f"    {kind}: p50 {statistics.median(xs):.2f} ms, p99 {p99:.2f} ms, "
                f"max {xs[-1]:.2f} ms"
            )
    print(f"document: {len(doc['rejected'])} entries for {doc['considered'] - 1} offers not chosen")
    print(f"chosen: {doc['chosen'] and (doc['chosen']['provider'], doc['chosen']['offer'])}")
    print(f"rejected by: {doc['rejectedBy']}")


if __name__ == "__main__":
    main()
