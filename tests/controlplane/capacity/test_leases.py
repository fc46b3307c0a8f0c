"""Listing and leasing in process (the real app over SQLite; launches through a
launcher TEST DOUBLE, ``capacity_doubles``): a lease on an idle worker, pending with
the reason when nothing can serve, granted later by the loop, renewed, released,
expired; a launch for a lease that fails over from a provider refusing for capacity,
which then shows its back-off in the listing."""

from __future__ import annotations

import time
from typing import Any

from capacity_doubles import EC2_NO_CAPACITY, RefusingCloudDouble
from dreamlake.controlplane.capacity import loop as capacity_loop
from launch_harness import P, ok

C = P + "/capacity"


def _provider(client: Any, name: str, offers: list[dict], limit: int, **extra: Any) -> None:
    kwargs = {
        "region": "us-east-1",
        "image_id": "ami-1",
        "capacity": {"limit": limit, "offers": offers, **extra},
    }
    body = {"name": name, "launcher": "EC2", "kwargs": kwargs, "dispatch": "daemon"}
    ok(client.post(P + "/providers", json=body), 201)


def _worker(client: Any, provider: str, iid: str) -> str:
    body = {"providerName": provider, "instanceId": iid, "host": iid, "queues": []}
    return str(ok(client.post(P + "/workers", json=body), 201)["workerId"])


def _tick(app: Any) -> None:
    capacity_loop.tick(app, app.state.registry_secret_box)


STD = [{"name": "std", "cpus": 4, "memoryGb": 16}]


def test_listing_shows_offers_state_and_prices(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    _provider(
        client,
        "aws",
        [*STD, {"name": "gpu", "accelerator": "A10G", "cpus": 8}],
        3,
        prices={"std": 0.2},
    )
    ok(client.put(C + "/prices", json={"prices": {"aws": {"std": 9.0, "gpu": 1.5}}}))
    _worker(client, "aws", "i-1")
    out = ok(client.get(C))
    (aws,) = [p for p in out["providers"] if p["name"] == "aws"]
    assert [(o["offer"], o["pricePerHour"]) for o in aws["offers"]] == [("std", 0.2), ("gpu", 1.5)]
    assert aws["workers"] == {"live": 1, "idle": 1, "launching": 0}
    assert (aws["limit"], aws["instances"], aws["leases"], aws["backoff"]) == (3, 1, 0, None)
    bad = client.put(C + "/prices", json={"prices": {"aws": {"std": -1}}})
    assert bad.status_code == 422 and "prices.aws.std" in bad.json()["detail"]


def test_lease_idle_then_pending_then_granted_when_released(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    _provider(client, "aws", STD, 1)
    wid = _worker(client, "aws", "i-1")
    first = ok(client.post(C + "/leases", json={"cpus": 2, "ttlSeconds": 60}), 201)
    assert first["state"] == "granted" and first["workerId"] == wid and first["via"] == "idle"
    assert first["decision"]["chosen"]["provider"] == "aws"
    second = ok(client.post(C + "/leases", json={"cpus": 2}), 202)
    assert second["state"] == "pending"
    assert "limit-reached" in second["reason"]
    (why,) = second["decision"]["rejected"]
    assert why["reason"] == "limit-reached"
    # an offer that cannot fit at all says so
    big = ok(client.post(C + "/leases", json={"cpus": 64}), 202)
    assert big["decision"]["rejected"][0]["reason"] == "does-not-fit"
    ok(client.delete(C + "/leases/" + big["id"]))
    assert ok(client.get(C))["providers"][0]["leases"] == 1

    released = ok(client.delete(C + "/leases/" + first["id"]))
    assert released["state"] == "released"
    _tick(app)  # the loop tries pending leases again
    again = ok(client.get(C + "/leases/" + second["id"]))
    assert again["state"] == "granted" and again["workerId"] == wid
    renewed = ok(client.post(C + "/leases/" + second["id"] + "/renew", json={"ttlSeconds": 7200}))
    assert renewed["ttlSeconds"] == 7200 and renewed["expiresAt"] > again["expiresAt"]
    assert client.post(C + "/leases/" + first["id"] + "/renew").status_code == 409
    assert client.get(C + "/leases/lse-nope").status_code == 404
    assert [x["id"] for x in ok(client.get(C + "/leases"))["leases"]] == [second["id"]]


def test_expiry_returns_capacity_by_itself(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    _provider(client, "aws", STD, 1)
    _worker(client, "aws", "i-1")
    short = ok(client.post(C + "/leases", json={"ttlSeconds": 1}), 201)
    waiting = ok(client.post(C + "/leases", json={}), 202)
    time.sleep(1.2)
    _tick(app)
    assert ok(client.get(C + "/leases/" + short["id"]))["state"] == "expired"
    assert ok(client.get(C + "/leases/" + waiting["id"]))["state"] == "granted"


def test_bad_lease_requests_are_422_with_the_field(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    for body, word in (
        ({"strategy": "best"}, "strategy"),
        ({"gpus": 1}, "unknown field"),
        ([], "object"),
    ):
        r = client.post(C + "/leases", json=body)
        assert r.status_code == 422 and word in r.json()["detail"], r.text


def test_launch_for_a_lease_fails_over_from_a_capacity_refusal(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    double = RefusingCloudDouble(refuse={"cheap": EC2_NO_CAPACITY})
    app.state.launch_backends = {"EC2": double}
    offer = [{"name": "g5.xlarge", "accelerator": "A10G", "cpus": 4, "memoryGb": 16}]
    _provider(client, "cheap", offer, 2, prices={"g5.xlarge": 0.5})
    _provider(client, "dear", offer, 2, prices={"g5.xlarge": 1.2})
    got = ok(client.post(C + "/leases", json={"accelerator": "A10G"}), 201)
    assert (got["state"], got["provider"], got["via"]) == ("granted", "dear", "launch")
    assert double.calls == ["cheap", "dear"]
    assert double.launched[0][2]["instance_type"] == "g5.xlarge"  # the offer's launch kwargs
    assert got["instanceId"] == "fake-dear-0"
    rejected = {r["provider"]: r for r in got["decision"]["rejected"]}
    assert rejected["cheap"]["reason"] == "back-off"
    listing = {p["name"]: p for p in ok(client.get(C))["providers"]}
    assert listing["cheap"]["backoff"]["reason"] == "InsufficientInstanceCapacity"
    assert listing["cheap"]["backoff"]["failures"] == 1
    assert listing["dear"]["backoff"] is None and listing["dear"]["leases"] == 1
    assert listing["dear"]["workers"]["launching"] == 1
    # releasing a lease that launched its instance terminates it: the unit returns
    ok(client.delete(C + "/leases/" + got["id"]))
    assert double.terminated == ["fake-dear-0"]
    # the decision alone, leasing nothing
    doc = ok(client.post(C + "/decisions", json={"accelerator": "A10G", "maxPricePerHour": 1}))
    assert doc["chosen"] is None
    assert {r["reason"] for r in doc["rejected"]} == {"back-off", "price"}


def test_the_catalog_is_kept_until_a_row_or_a_price_changes(app_client: tuple[Any, Any]) -> None:
    from dreamlake.controlplane.capacity import service

    client, app = app_client
    app.state.queue_loop.stop()
    # a limit of 0: every request stays pending (no launch), and its decision says why
    _provider(client, "kept", [{"name": "small", "cpus": 2}], 0, prices={"small": 0.1})
    body = {"cpus": 2, "providers": ["kept"], "maxPricePerHour": 0.3, "ttlSeconds": 60}

    def decided() -> tuple[Any, list[tuple[str, list[str]]]]:
        doc = ok(client.post(C + "/leases", json=body), 202)["decision"]
        rejected = [(r["reason"], r["offers"]) for r in doc["rejected"]]
        return next(reversed(service._CATALOGS.values())), rejected

    first, why = decided()
    assert why == [("limit-reached", ["small"])]
    again, _ = decided()
    assert again is first  # the same row and prices: laid out once
    kwargs: dict[str, Any] = {"region": "us-east-1", "image_id": "ami-1"}
    offers = [{"name": "big", "cpus": 8}]
    kwargs["capacity"] = {"limit": 0, "offers": offers, "prices": {"big": 0.5}}
    ok(client.patch(P + "/providers/kept", json={"kwargs": kwargs}))
    changed, why = decided()
    assert changed is not first and why == [("price", ["big"])]
    ok(client.put(C + "/prices", json={"prices": {"*": {"big": 0.2}}}))
    priced, why = decided()
    assert priced is not changed and why == [("price", ["big"])]  # the row's own price wins
    kwargs["capacity"] = {"limit": 0, "offers": offers}
    ok(client.patch(P + "/providers/kept", json={"kwargs": kwargs}))
    _, why = decided()
    assert why == [("limit-reached", ["big"])]  # now the table's 0.2/h
