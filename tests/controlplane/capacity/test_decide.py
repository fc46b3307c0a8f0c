"""The placement core, pure: offers priced from the operator's tables, every strategy
on a worked example (the one docs/capacity.md walks through), a reason for every offer
not chosen, and the decision's JSON Schema held in a snapshot."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from dreamlake.controlplane.capacity.decide import (
    Catalog,
    ProviderState,
    Request,
    RequestError,
    decide,
)
from dreamlake.controlplane.capacity.offers import OfferError, limit_of, offers_of
from dreamlake.controlplane.capacity.schema import decision_schema

SNAPSHOT = Path(__file__).parent / "snapshots" / "decision.schema.json"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _example() -> tuple[list, dict[str, ProviderState]]:
    """The worked example: EC2 with two GPU types, a SLURM GPU partition, an SSH box."""
    table = {"slurm-lab": {"gpu": 0.40}, "*": {"box-1": 0.0}}
    aws = {
        "region": "us-east-1",
        "capacity": {
            "limit": 4,
            "prices": {"g5.xlarge": 1.006, "p4d.24xlarge": 32.77},
            "offers": [
                {"name": "g5.xlarge", "accelerator": "A10G", "cpus": 4, "memoryGb": 16},
                {
                    "name": "p4d.24xlarge",
                    "accelerator": "A100",
                    "accelerators": 8,
                    "cpus": 96,
                    "memoryGb": 1152,
                },
            ],
        },
    }
    slurm = {
        "host": "login",
        "capacity": {
            "priority": 5,
            "offers": [
                {"name": "gpu", "accelerator": "a10g", "cpus": 16, "memoryGb": 64},
            ],
        },
    }
    ssh = {
        "hosts": ["box-1"],
        "capacity": {"offers": [{"name": "box-1", "cpus": 8, "memoryGb": 32}]},
    }
    offers = [
        *offers_of("aws", "EC2", aws, table),
        *offers_of("slurm-lab", "SLURM", slurm, table),
        *offers_of("ssh-box", "SSH", ssh, table),
    ]
    states = {
        "aws": ProviderState("aws", limit=4, instances=1, load=1),
        "slurm-lab": ProviderState("slurm-lab", limit=2, instances=0, priority=5, load=3),
        "ssh-box": ProviderState("ssh-box", limit=1, instances=1, idle={"box-1": 1}, load=1),
    }
    return offers, states


def test_offers_priced_from_provider_then_namespace_table() -> None:
    offers, _ = _example()
    prices = {(o.provider, o.name): o.price for o in offers}
    assert prices == {
        ("aws", "g5.xlarge"): 1.006,
        ("aws", "p4d.24xlarge"): 32.77,
        ("slurm-lab", "gpu"): 0.40,
        ("ssh-box", "box-1"): 0.0,
    }
    g5 = next(o for o in offers if o.name == "g5.xlarge")
    assert g5.accelerators == 1 and g5.launch == {"instance_type": "g5.xlarge"}


def test_offers_derived_without_a_capacity_kwarg() -> None:
    ec2 = offers_of("a", "EC2", {"region": "r", "instance_type": "m5.large"})
    assert [(o.name, o.region, o.price) for o in ec2] == [("m5.large", "r", None)]
    ssh = offers_of("s", "SSH", {"hosts": ["u@h1", "u@h2"]}, {"s": {"u@h1": 0.1}})
    assert [(o.name, o.price) for o in ssh] == [("u@h1", 0.1), ("u@h2", None)]
    assert limit_of("SSH", {"hosts": ["a", "b"]}) == 2
    assert limit_of("EC2", {"capacity": {"limit": 3}}) == 3
    assert limit_of("EC2", {}) is None
    with pytest.raises(OfferError, match="limit"):
        limit_of("EC2", {"capacity": {"limit": -1}})
    with pytest.raises(OfferError, match=r"offers\[0\]"):
        offers_of("a", "EC2", {"capacity": {"offers": [{"cpus": 2}]}})


def _reasons(doc: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(provider, offer) → reason, each offer once (the document groups them)."""
    out: dict[tuple[str, str], str] = {}
    for r in doc["rejected"]:
        for o in r["offers"]:
            assert (r["provider"], o) not in out, (r, out)
            out[(r["provider"], o)] = r["reason"]
    return out


@pytest.mark.parametrize(
    ("strategy", "provider", "offer", "via"),
    [
        ("cheapest", "slurm-lab", "gpu", "launch"),  # 0.40/h beats 1.006/h
        ("priority", "slurm-lab", "gpu", "launch"),  # priority 5 beats 0
        ("spread", "aws", "g5.xlarge", "launch"),  # load 1 beats load 3
        ("least-waste", "aws", "g5.xlarge", "launch"),  # 4 CPUs of 4 used, not 4 of 16
    ],
)
def test_strategies_on_the_worked_example(
    strategy: str, provider: str, offer: str, via: str
) -> None:
    offers, states = _example()
    req = Request.from_wire(
        {"accelerator": "A10G", "cpus": 4, "memoryGb": 16, "strategy": strategy}
    )
    doc = decide(req, offers, states, NOW)
    jsonschema.validate(doc, decision_schema())
    assert (doc["chosen"]["provider"], doc["chosen"]["offer"], doc["chosen"]["via"]) == (
        provider,
        offer,
        via,
    )
    reasons = _reasons(doc)
    assert reasons[("aws", "p4d.24xlarge")] == "does-not-fit"  # an A100, not an A10G
    assert reasons[("ssh-box", "box-1")] == "does-not-fit"  # no accelerator
    assert len(reasons) == doc["considered"] - 1  # every other offer, once


def test_an_idle_worker_wins_when_it_fits_and_the_reasons_are_closed() -> None:
    offers, states = _example()
    doc = decide(Request.from_wire({"cpus": 8}), offers, states, NOW)
    assert doc["chosen"]["provider"] == "ssh-box" and doc["chosen"]["via"] == "idle"
    assert doc["summary"].startswith("ssh-box/box-1 at 0/h on an idle worker")


def test_every_reason_for_not_choosing() -> None:
    offers, states = _example()
    states = {
        **states,
        "aws": ProviderState(
            "aws",
            limit=4,
            instances=1,
            backoff_until=NOW + timedelta(seconds=30),
            backoff_reason="InsufficientInstanceCapacity",
        ),
        "slurm-lab": ProviderState("slurm-lab", limit=1, instances=1),
    }
    req = Request.from_wire({"maxPricePerHour": 0.5, "excludeProviders": ["ssh-box"]})
    doc = decide(req, offers, states, NOW)
    jsonschema.validate(doc, decision_schema())
    assert doc["chosen"] is None
    got = {
        (r["provider"], o): (r["reason"], r["detail"]) for r in doc["rejected"] for o in r["offers"]
    }
    assert got[("aws", "g5.xlarge")][0] == "back-off"
    assert "InsufficientInstanceCapacity" in got[("aws", "g5.xlarge")][1]
    assert got[("slurm-lab", "gpu")][0] == "limit-reached"
    assert got[("ssh-box", "box-1")][0] == "not-allowed"
    assert doc["rejectedBy"] == {"not-allowed": 1, "back-off": 2, "limit-reached": 1}
    assert doc["summary"].startswith("none of 4 offer(s) can serve now")
    # past the back-off, the price is what stops aws
    later = decide(req, offers, states, NOW + timedelta(seconds=31))
    assert {r["reason"] for r in later["rejected"] if r["provider"] == "aws"} == {"price"}


def test_unknown_price_is_last_for_cheapest_and_refused_under_a_maximum() -> None:
    offers = offers_of("a", "EC2", {"instance_type": "x"}) + offers_of(
        "b", "EC2", {"instance_type": "y"}, {"b": {"y": 3.0}}
    )
    states = {"a": ProviderState("a"), "b": ProviderState("b")}
    assert decide(Request(), offers, states, NOW)["chosen"]["provider"] == "b"
    doc = decide(Request(max_price=5), offers, states, NOW)
    assert [r["reason"] for r in doc["rejected"]] == ["price"]


def test_priority_follows_the_named_order() -> None:
    offers = offers_of("a", "EC2", {}) + offers_of("b", "EC2", {})
    states = {"a": ProviderState("a"), "b": ProviderState("b")}
    req = Request(strategy="priority")
    assert decide(req, offers, states, NOW, order=("b", "a"))["chosen"]["provider"] == "b"
    req = Request.from_wire({"strategy": "priority", "providers": ["a", "b"]})
    assert decide(req, offers, states, NOW, order=("b", "a"))["chosen"]["provider"] == "a"


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"strategy": "random"}, "strategy"),
        ({"cpus": -1}, "cpus"),
        ({"ttlSeconds": 0}, "ttlSeconds"),
        ({"gpus": 1}, "unknown field"),
        ({"providers": "aws"}, "providers"),
        ({"accelerators": 1.5}, "accelerators"),
    ],
)
def test_bad_requests_say_which_field(body: dict, match: str) -> None:
    with pytest.raises(RequestError, match=match):
        Request.from_wire(body)


def test_decision_schema_snapshot() -> None:
    """A contract change must be deliberate: regenerate with DREAMLAKE_UPDATE_SNAPSHOTS=1."""
    current = json.dumps(decision_schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("DREAMLAKE_UPDATE_SNAPSHOTS") == "1" or not SNAPSHOT.exists():
        SNAPSHOT.write_text(current)
    assert current == SNAPSHOT.read_text(), "the decision contract changed; see the snapshot diff"
    jsonschema.Draft202012Validator.check_schema(decision_schema())


def test_a_kept_catalog_decides_as_the_list_does() -> None:
    offers, states = _example()
    catalog = Catalog(offers)
    for body in (
        {"accelerator": "a10g", "cpus": 4},
        {"cpus": 8, "strategy": "spread"},
        {"maxPricePerHour": 0.5, "strategy": "least-waste"},
    ):
        req = Request.from_wire(body)
        assert decide(req, catalog, states, NOW) == decide(req, offers, states, NOW)
        assert decide(req, catalog, states, NOW) == decide(req, catalog, states, NOW)
