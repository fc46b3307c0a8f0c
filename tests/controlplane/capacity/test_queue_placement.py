"""A queue over several providers, in process (launches through launcher TEST
DOUBLES from ``capacity_doubles``; the workers are the real worker API driven by
the test): it grows on the cheapest provider that can serve; a capacity refusal
there puts that provider in back-off (in the listing) and the work goes to the next
one in the same pass; every item is run once; a single ``provider`` still works."""

from __future__ import annotations

import time
from typing import Any

import pytest
from capacity_doubles import (
    EC2_LIMIT,
    EC2_NO_CAPACITY,
    GCE_EXHAUSTED,
    SLURM_FULL,
    RefusingCloudDouble,
)
from dreamlake.controlplane.capacity.refusal import capacity_refusal
from dreamlake.controlplane.queues.loop import QueueLoop
from launch_harness import P, ok


def _providers(client: Any) -> None:
    def add(name: str, launcher: str, kwargs: dict[str, Any], price: float) -> None:
        kwargs = {**kwargs, "capacity": {"limit": 2, "prices": {}, **kwargs.get("capacity", {})}}
        body = {"name": name, "launcher": launcher, "kwargs": kwargs, "dispatch": "daemon"}
        ok(client.post(P + "/providers", json=body), 201)
        offer = kwargs["capacity"].get("offers", [{"name": "x"}])[0]["name"]
        prices = ok(client.get(P + "/capacity/prices"))["prices"]
        prices[name] = {offer: price}
        ok(client.put(P + "/capacity/prices", json={"prices": prices}))

    add("aws", "EC2", {"region": "us-east-1", "instance_type": "g5.xlarge",
                       "capacity": {"offers": [{"name": "g5.xlarge"}]}}, 0.10)  # fmt: skip
    add("hpc", "SLURM", {"host": "login", "partition": "gpu",
                         "capacity": {"offers": [{"name": "gpu"}]}}, 0.30)  # fmt: skip
    add("box-a", "SSH", {"hosts": ["a"], "capacity": {"offers": [{"name": "a"}]}}, 0.50)
    add("box-b", "SSH", {"hosts": ["b"], "capacity": {"offers": [{"name": "b"}]}}, 0.60)


def _drain(client: Any, double: RefusingCloudDouble, ran: dict[str, list[str]]) -> None:
    """Each launched fake instance's daemon: the real worker API (register once, then
    claim and report until nothing is left for it)."""
    for provider, iid, _ in double.launched:
        if iid in double.terminated:
            continue
        if iid not in ran:
            ran[iid] = []
            body = {"providerName": provider, "instanceId": iid, "queues": ["gpu"]}
            WORKERS[iid] = (provider, ok(client.post(P + "/workers", json=body), 201)["workerId"])
        provider, wid = WORKERS[iid]
        while True:
            r = client.get(P + f"/workers/{wid}/work")
            if r.status_code == 204:
                break
            item = ok(r)
            ran[iid].append(item["id"])
            done = {"exitCode": 0, "outputTail": f"ran on {provider}"}
            ok(client.post(P + f"/workers/{wid}/work/{item['id']}/result", json=done))


WORKERS: dict[str, tuple[str, str]] = {}


def test_mixed_queue_fails_over_from_a_refusing_cheapest_provider(
    app_client: tuple[Any, Any],
) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    double = RefusingCloudDouble(refuse={"aws": EC2_NO_CAPACITY})
    app.state.launch_backends = {"EC2": double, "SLURM": double, "SSH": double}
    _providers(client)
    q = {
        "name": "gpu",
        "providers": ["aws", "hpc", "box-a", "box-b"],
        "strategy": "cheapest",
        "max": 4,
        "idleSeconds": 0,
    }
    made = ok(client.post(P + "/queues", json=q), 201)
    assert made["provider"] == "aws" and made["providers"] == q["providers"]
    items = [
        ok(
            client.post(P + "/providers/aws/work", json={"command": f"echo {n}", "queue": "gpu"}),
            201,
        )["id"]
        for n in range(6)
    ]
    loop = QueueLoop(app, tick=0.1)
    started = time.monotonic()
    loop.once()
    took = time.monotonic() - started
    assert took < 5, f"the failover took {took:.1f}s"
    assert double.calls[:2] == ["aws", "hpc"]  # refused on the cheapest, then the next
    status = ok(client.get(P + "/queues/gpu/status"))
    actions = [e["action"] for e in status["events"]]
    assert actions[:2] == ["refused", "launch"], status["events"]
    assert "InsufficientInstanceCapacity" in status["events"][0]["detail"]
    assert "on hpc/gpu at 0.3/h (cheapest)" in status["events"][1]["detail"]
    listing = {p["name"]: p for p in ok(client.get(P + "/capacity"))["providers"]}
    assert listing["aws"]["backoff"]["reason"] == "InsufficientInstanceCapacity"
    assert listing["hpc"]["backoff"] is None

    ran: dict[str, list[str]] = {}
    for _ in range(8):
        _drain(client, double, ran)
        loop.once()
        if all(ok(client.get(P + f"/work/{i}"))["state"] == "succeeded" for i in items):
            break
    done = [ok(client.get(P + f"/work/{i}")) for i in items]
    assert [d["state"] for d in done] == ["succeeded"] * 6
    every = [i for ids in ran.values() for i in ids]
    assert sorted(every) == sorted(items)  # nothing lost, nothing run twice
    assert "aws" not in {d["providerName"] for d in done}  # the refusing one ran nothing
    assert double.calls.count("aws") == 1  # in back-off: not asked again meanwhile
    # the idle workers go (idleSeconds 0, min 0)
    loop.once()
    loop.once()
    assert len(double.terminated) >= 1


def test_priority_follows_the_queue_order_and_single_provider_still_works(
    app_client: tuple[Any, Any],
) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    double = RefusingCloudDouble()
    app.state.launch_backends = {"EC2": double, "SLURM": double, "SSH": double}
    _providers(client)
    q = {"name": "gpu", "providers": ["box-b", "aws"], "max": 1}
    assert ok(client.post(P + "/queues", json=q), 201)["strategy"] is None  # priority
    ok(client.post(P + "/providers/aws/work", json={"command": "true", "queue": "gpu"}), 201)
    loop = QueueLoop(app, tick=0.1)
    loop.once()
    assert double.calls == ["box-b"]  # first named, though dearer
    status = ok(client.get(P + "/queues/gpu/status"))
    assert status["pending"] == 1 and "1 moved there" in status["events"][-1]["detail"]
    # the classic single-provider queue is untouched
    ok(client.post(P + "/queues", json={"name": "one", "provider": "hpc", "max": 1}), 201)
    one = ok(client.get(P + "/queues/one/status"))
    assert one["providers"] == ["hpc"] and one["strategy"] is None
    bad = client.post(P + "/queues", json={"name": "x", "providers": ["aws"], "strategy": "random"})
    assert bad.status_code == 422 and "strategy" in bad.json()["detail"]
    assert client.post(P + "/queues", json={"name": "y", "providers": ["ghost"]}).status_code == 404


def test_every_provider_refusing_leaves_the_work_waiting_with_the_reasons(
    app_client: tuple[Any, Any],
) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    double = RefusingCloudDouble(
        refuse={
            "aws": EC2_LIMIT,
            "hpc": SLURM_FULL,
            "box-a": "only 0 of the provider's hosts have no daemon of this provider",
            "box-b": "no free host",
        }
    )
    app.state.launch_backends = {"EC2": double, "SLURM": double, "SSH": double}
    _providers(client)
    ok(
        client.post(
            P + "/queues",
            json={"name": "gpu", "providers": ["aws", "hpc", "box-a", "box-b"], "max": 2},
        ),
        201,
    )
    ok(client.post(P + "/providers/hpc/work", json={"command": "true", "queue": "gpu"}), 201)
    loop = QueueLoop(app, tick=0.1)
    loop.once()
    assert double.calls == ["aws", "hpc", "box-a", "box-b"]
    events = ok(client.get(P + "/queues/gpu/status"))["events"]
    assert [e["action"] for e in events] == ["refused"] * 4 + ["no-capacity"]
    assert "4 back-off" in events[-1]["detail"]
    loop.once()
    assert len(double.calls) == 4  # all in back-off: nobody asked again
    backoffs = {
        p["name"]: p["backoff"]["reason"] for p in ok(client.get(P + "/capacity"))["providers"]
    }
    assert backoffs == {
        "aws": "InstanceLimitExceeded",
        "hpc": "SLURM submit limit reached",
        "box-a": "SSH pool has no free host",
        "box-b": "SSH pool has no free host",
    }


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (EC2_NO_CAPACITY, "InsufficientInstanceCapacity"),
        (EC2_LIMIT, "InstanceLimitExceeded"),
        (GCE_EXHAUSTED, "ZONE_RESOURCE_POOL_EXHAUSTED"),
        (
            "Google Cloud refused the request: The zone 'projects/p/zones/z' does not have "
            "enough resources available to fulfill the request. Try a different zone.",
            "ZONE_RESOURCE_POOL_EXHAUSTED",
        ),
        ("Quota 'CPUS' exceeded.  Limit: 24.0 in region us-central1.", "QUOTA_EXCEEDED"),
        (SLURM_FULL, "SLURM submit limit reached"),
        (
            "the SLURM launch was refused: sbatch refused the job: sbatch: error: Batch job "
            "submission failed: Required partition not available (inactive or drain)",
            "SLURM partition not available",
        ),
        (
            "asked for 1 host(s) but only 0 of the provider's hosts have no daemon of this provider",
            "SSH pool has no free host",
        ),
        ("AWS refused the request (AuthFailure): bad key", None),
    ],
)
def test_capacity_refusals_are_told_from_other_failures(text: str, reason: str | None) -> None:
    assert capacity_refusal(text) == reason


def test_a_leased_worker_is_not_free_for_queue_work(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    double = RefusingCloudDouble()
    app.state.launch_backends = {"EC2": double, "SLURM": double, "SSH": double}
    _providers(client)
    ok(
        client.post(P + "/queues", json={"name": "gpu", "providers": ["box-a", "box-b"], "max": 2}),
        201,
    )
    body = {"providerName": "box-a", "instanceId": "a", "queues": ["gpu"]}
    ok(client.post(P + "/workers", json=body), 201)
    lease = ok(client.post(P + "/capacity/leases", json={"providers": ["box-a"]}), 201)
    assert lease["instanceId"] == "a"
    ok(client.post(P + "/providers/box-a/work", json={"command": "true", "queue": "gpu"}), 201)
    loop = QueueLoop(app, tick=0.1)
    loop.once()
    # box-a's only worker is leased: not free, so the queue launches one (box-a first
    # by priority, under its limit of 2) instead of leaving the item to the leased one
    assert double.calls == ["box-a"]
    events = ok(client.get(P + "/queues/gpu/status"))["events"]
    assert [e["action"] for e in events] == ["launch"]
    assert events[0]["detail"].startswith("1 worker(s) on box-a/a")


def test_a_hybrid_provider_grows_daemon_workers_for_a_placed_queue(
    app_client: tuple[Any, Any],
) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    double = RefusingCloudDouble()
    app.state.launch_backends = {"SSH": double}
    body = {"name": "hy", "launcher": "SSH", "kwargs": {"hosts": ["h"]}, "dispatch": "hybrid"}
    ok(client.post(P + "/providers", json=body), 201)
    ok(client.post(P + "/queues", json={"name": "gpu", "providers": ["hy"], "max": 1}), 201)
    ok(client.post(P + "/providers/hy/work", json={"command": "true", "queue": "gpu"}), 201)
    QueueLoop(app, tick=0.1).once()
    assert (double.calls, double.dispatches) == (["hy"], ["daemon"])
