"""The offers laid out for deciding (``Catalog``): grouped by provider and
accelerator, with the figures a request is checked against as ``numpy`` columns
(numpy is imported where a catalog is built and a decision made, not with the
module: a server that never decides does not pay for it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .offers import Offer


class Catalog:
    """The offers laid out for deciding: grouped by provider (in the order given) and,
    within a provider, by accelerator, with the figures a request is checked against
    as columns (``numpy`` arrays) so one request checks them all at once. Build it
    once for as long as the offers stay the same (the server keeps one per set of
    provider rows and prices: ``service.Snapshot.catalog``); ``decide`` builds one
    itself from a plain list. Threads may share one: deciding reads it, and fills its
    memos whole."""

    __slots__ = (
        "accelerators",
        "count",
        "cpu_ids",
        "cpus",
        "memory",
        "memory_ids",
        "name_list",
        "names",
        "offers",
        "price",
        "providers",
        "spot",
    )

    def __init__(self, offers: Iterable[Offer]) -> None:
        import numpy as np

        given = list(offers)
        self.count = len(given)
        # one pass: the provider and the (provider, accelerator) group of each offer,
        # both numbered in the order first met, and the columns in the order given
        provider_of: dict[str, int] = {}
        group_of: dict[tuple[int, str | None], int] = {}
        spelled: list[str | None] = []
        group_provider: list[int] = []
        groups: list[int] = []
        nan = float("nan")
        accelerators, cpus, memory, spot, price = [], [], [], [], []
        for o in given:
            pid = provider_of.setdefault(o.provider, len(provider_of))
            key = (pid, _lower(o.accelerator))
            gid = group_of.get(key)
            if gid is None:
                gid = group_of[key] = len(spelled)
                spelled.append(o.accelerator)
                group_provider.append(pid)
            groups.append(gid)
            accelerators.append(o.accelerators)
            cpus.append(nan if o.cpus is None else o.cpus)
            memory.append(nan if o.memory_gb is None else o.memory_gb)
            spot.append(o.spot)
            price.append(nan if o.price is None else o.price)
        # laid out by provider, then accelerator group, each in the order given
        ordered = sorted(range(len(spelled)), key=lambda g: (group_provider[g], g))
        rank = np.empty(len(spelled), dtype=np.int64)
        rank[ordered] = np.arange(len(spelled))
        group_ids = np.array(groups, dtype=np.int64)
        laid = np.argsort(rank[group_ids], kind="stable")
        self.offers = [given[i] for i in laid.tolist()]
        self.name_list = names = [o.name for o in self.offers]
        self.names = np.array(names, dtype=object)
        self.accelerators = np.array(accelerators, dtype=np.int64)[laid]
        self.cpus = np.array(cpus, dtype=float)[laid]
        self.memory = np.array(memory, dtype=float)[laid]
        self.spot = np.array(spot, dtype=bool)[laid]
        self.price = np.array(price, dtype=float)[laid]
        # each distinct CPU count and memory size numbered, so a does-not-fit sentence
        # ("offers 8") is found once per value, not once per offer
        self.cpu_ids = np.unique(self.cpus, return_inverse=True)[1].reshape(-1)
        self.memory_ids = np.unique(self.memory, return_inverse=True)[1].reshape(-1)
        self.providers: dict[str, _Slot] = {}
        providers = list(provider_of)
        sizes = np.bincount(group_ids, minlength=len(spelled)).tolist()
        start = 0
        for gid in ordered:
            p = providers[group_provider[gid]]
            slot = self.providers.get(p)
            if slot is None:
                slot = self.providers[p] = _Slot(p, start)
            acc = _lower(spelled[gid])
            slot.groups[acc] = (start, start + sizes[gid], spelled[gid])
            slot.group_names[acc] = names[start : start + sizes[gid]]
            start += sizes[gid]
            slot.end = start
        # each provider's positions in the order its offers were given
        at = np.empty(len(given), dtype=np.intp)
        at[laid] = np.arange(len(given))
        pids = np.array([provider_of[o.provider] for o in given], dtype=np.int64)
        by_provider = at[np.argsort(pids, kind="stable")]
        cut = np.cumsum([slot.end - slot.start for slot in self.providers.values()])[:-1]
        parts = np.split(by_provider, cut) if self.providers else []
        for slot, mine in zip(self.providers.values(), parts, strict=True):
            slot.given = mine
            slot.names = [names[i] for i in mine.tolist()]


def _lower(acc: str | None) -> str | None:
    return acc.lower() if acc is not None else None


class _Slot:
    """One provider's stretch of a catalog, ``[start, end)``: its positions in the order
    the offers were given, their names in that order, ``(a, b, spelling)`` per
    accelerator, and the positions of each offer name."""

    __slots__ = (
        "_positions",
        "_split",
        "end",
        "given",
        "group_names",
        "groups",
        "names",
        "provider",
        "start",
    )

    def __init__(self, provider: str, start: int) -> None:
        self.provider = provider
        self.start = self.end = start
        self.given: Any = None
        self.names: list[str] = []
        self.groups: dict[str | None, tuple[int, int, str | None]] = {}
        self.group_names: dict[str | None, list[str]] = {}
        self._positions: dict[str, list[int]] | None = None
        self._split: dict[str, tuple[list[tuple[str, str, list[str]]], Any]] = {}

    def split(self, accelerator: str) -> tuple[list[tuple[str, str, list[str]]], Any]:
        """For a request naming ``accelerator`` (as it spells it): the does-not-fit
        entries of this provider's other accelerators, and the positions of the asked
        one's offers (None when it has none). Worked out once per spelling asked."""
        import numpy as np

        got = self._split.get(accelerator)
        if got is None:
            if len(self._split) >= 64:  # bounded, whatever requests name
                self._split.clear()
            want = accelerator.lower()
            others: list[tuple[str, str, list[str]]] = []
            run = None
            for acc, (a, b, spelling) in self.groups.items():
                if acc == want:
                    run = np.arange(a, b)
                else:
                    why = f"wants {accelerator}, offers {spelling or 'no accelerator'}"
                    others.append(("does-not-fit", why, self.group_names[acc]))
            got = self._split[accelerator] = (others, run)
        return got

    def positions(self, catalog: Catalog) -> dict[str, list[int]]:
        """Where each offer name of this provider is laid out (found the first time
        a provider has an idle worker)."""
        if self._positions is None:
            found: dict[str, list[int]] = {}
            for i in range(self.start, self.end):
                found.setdefault(catalog.name_list[i], []).append(i)
            self._positions = found  # whole, for a thread deciding beside this one
        return self._positions
