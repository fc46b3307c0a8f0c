"""The vectorised decision agrees with the plain loop it replaced
(``reference_decide``), document for document, on generated catalogs: every state a
provider can be in, offers sharing names, accelerators spelled two ways, prices tied
or missing, and every strategy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dreamlake.controlplane.capacity.decide import Catalog, ProviderState, Request, decide
from dreamlake.controlplane.capacity.offers import Offer
from hypothesis import given, settings
from hypothesis import strategies as st

from .reference_decide import reference_decide

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
PROVIDERS = ["p0", "p1", "p2", "p3", "p4"]
NAMES = ["a", "b", "c", "d", "e", "f"]

offer = st.builds(
    Offer,
    provider=st.sampled_from(PROVIDERS),
    name=st.sampled_from(NAMES),
    accelerator=st.sampled_from([None, "A10G", "a10g", "H100"]),
    accelerators=st.integers(0, 4),
    cpus=st.sampled_from([None, 0.0, 1.0, 2.0, 4.0, 4.0000001, 8.0]),
    memory_gb=st.sampled_from([None, 0.0, 4.0, 16.0, 64.0]),
    spot=st.booleans(),
    price=st.sampled_from([None, 0.0, 0.5, 0.5, 1.0, 2.5, 9.0]),
)


@st.composite
def provider_state(draw: st.DrawFn, name: str) -> ProviderState:
    limit = draw(st.sampled_from([None, 0, 2, 5]))
    return ProviderState(
        name,
        limit=limit,
        instances=draw(st.integers(0, 5)),
        idle=draw(st.dictionaries(st.sampled_from(NAMES), st.integers(0, 2), max_size=3)),
        load=draw(st.integers(0, 3)),
        priority=draw(st.sampled_from([0.0, 1.0, 5.0])),
        backoff_until=draw(
            st.sampled_from([None, NOW - timedelta(seconds=1), NOW + timedelta(seconds=30)])
        ),
        backoff_reason=draw(st.sampled_from([None, "InsufficientInstanceCapacity"])),
        can_launch=draw(st.booleans()),
    )


@st.composite
def world(draw: st.DrawFn) -> tuple[list[Offer], dict[str, ProviderState]]:
    offers = draw(st.lists(offer, max_size=40))
    seen = draw(st.lists(st.sampled_from(PROVIDERS), unique=True))
    return offers, {p: draw(provider_state(p)) for p in seen}


request = st.fixed_dictionaries(
    {},
    optional={
        "accelerator": st.sampled_from(["A10G", "a10g", "H100", "L4"]),
        "accelerators": st.integers(0, 3),
        "cpus": st.sampled_from([0, 1, 2, 4, 6]),
        "memoryGb": st.sampled_from([0, 8, 16]),
        "maxPricePerHour": st.sampled_from([0, 0.5, 2.5, 100]),
        "spot": st.sampled_from([None, True, False]),
        "providers": st.lists(st.sampled_from(PROVIDERS), max_size=3),
        "excludeProviders": st.lists(st.sampled_from(PROVIDERS), max_size=2),
        "strategy": st.sampled_from(["cheapest", "priority", "spread", "least-waste"]),
    },
)


@settings(max_examples=600, deadline=None)
@given(world(), request, st.lists(st.sampled_from(PROVIDERS), unique=True))
def test_decide_matches_the_reference(
    w: tuple[list[Offer], dict[str, ProviderState]], body: dict, order: list[str]
) -> None:
    offers, states = w
    req = Request.from_wire(body)
    expected = reference_decide(req, offers, states, NOW, order=order)
    assert decide(req, offers, states, NOW, order=order) == expected
    assert decide(req, Catalog(offers), states, NOW, order=order) == expected
