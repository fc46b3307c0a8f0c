"""A worker a capacity lease holds takes no queue work through its own poll, on a
real server subprocess over SQLite and over PostgreSQL: the item stays queued for
another worker, who gets it; once the lease is released, or runs out, the worker
claims as before. In process (SQLite): the worker on an instance launched for a
lease is held the same way (the launch goes through a launcher TEST DOUBLE)."""

from __future__ import annotations

import threading
import time
from typing import Any

from capacity_doubles import RefusingCloudDouble
from dreamlake.controlplane.client import Client
from dreamlake.controlplane.models import Worker, WorkItem
from dreamlake.controlplane.server import store
from launch_harness import P, ok

SHARES_SERVER = True  # its tests keep to namespaces of their own: the session's server

STD = [{"name": "std", "cpus": 4, "memoryGb": 16}]


def _provider(client: Client, name: str) -> None:
    kwargs = {"region": "us-east-1", "image_id": "ami-1", "capacity": {"limit": 4, "offers": STD}}
    body = {"name": name, "launcher": "EC2", "kwargs": kwargs, "dispatch": "daemon"}
    client.create_provider_row(body)


def _lease(client: Client, ns: str, ttl: float) -> dict[str, Any]:
    out: dict[str, Any] = client.request(
        "POST", f"/api/namespaces/{ns}/capacity/leases", {"ttlSeconds": ttl}
    )
    return out


def test_a_leased_worker_polls_no_queue_work_until_the_lease_ends(
    fresh_namespace: tuple[str, Client],
) -> None:
    ns, client = fresh_namespace
    _provider(client, "box")
    a = client.register("box", "a", host="a")["workerId"]
    lease = _lease(client, ns, 60)
    assert (lease["state"], lease["workerId"]) == ("granted", a)
    b = client.register("box", "b", host="b")["workerId"]

    first = client.submit_work("box", "true")
    assert client.poll_work(a) is None  # the claim that would hand it out refuses
    # a long poll held while the item arrives: woken, it still takes nothing
    got: list[Any] = []
    waiting = threading.Thread(target=lambda: got.append(client.poll_work(a, wait=1.5)))
    waiting.start()
    time.sleep(0.3)
    second = client.submit_work("box", "true")
    waiting.join(10)
    assert got == [None]
    assert client.get_work(first["id"])["state"] == "queued"
    assert client.get_work(second["id"])["state"] == "queued"
    # the work stays for anyone else
    taken = client.poll_work(b)
    assert taken is not None and taken["id"] == first["id"] and taken["workerId"] == b

    # released: the worker claims as before
    client.request("DELETE", f"/api/namespaces/{ns}/capacity/leases/{lease['id']}")
    mine = client.poll_work(a)
    assert mine is not None and mine["id"] == second["id"] and mine["workerId"] == a
    client.report(a, mine["id"], exit_code=0)

    # leased again (b is busy, so the lease is on a), briefly: held, then free by expiry
    short = _lease(client, ns, 1)
    assert (short["state"], short["workerId"]) == ("granted", a)
    third = client.submit_work("box", "true")
    assert client.poll_work(a) is None
    time.sleep(1.2)
    after = client.poll_work(a)
    assert after is not None and after["id"] == third["id"] and after["workerId"] == a


def test_the_worker_on_an_instance_launched_for_a_lease_is_held(
    app_client: tuple[Any, Any],
) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    app.state.launch_backends = {"EC2": RefusingCloudDouble()}
    kwargs = {"region": "us-east-1", "image_id": "ami-1", "capacity": {"limit": 2, "offers": STD}}
    body = {"name": "aws", "launcher": "EC2", "kwargs": kwargs, "dispatch": "daemon"}
    ok(client.post(P + "/providers", json=body), 201)
    lease = ok(client.post(P + "/capacity/leases", json={"cpus": 2}), 201)
    assert (lease["via"], lease["instanceId"]) == ("launch", "fake-aws-0")
    # the launched instance's daemon comes up and polls
    reg = {"providerName": "aws", "instanceId": "fake-aws-0", "host": "h", "queues": []}
    wid = ok(client.post(P + "/workers", json=reg), 201)["workerId"]
    # not idle for another lease or for queue placement either
    (aws,) = [p for p in ok(client.get(P + "/capacity"))["providers"] if p["name"] == "aws"]
    assert aws["workers"] == {"live": 1, "idle": 0, "launching": 0}
    item = ok(client.post(P + "/providers/aws/work", json={"command": "true"}), 201)
    assert client.get(P + f"/workers/{wid}/work").status_code == 204
    assert ok(client.get(P + f"/work/{item['id']}"))["state"] == "queued"
    # another worker of the provider takes it
    other = {"providerName": "aws", "instanceId": "i-other", "host": "o", "queues": []}
    oid = ok(client.post(P + "/workers", json=other), 201)["workerId"]
    taken = ok(client.get(P + f"/workers/{oid}/work"))
    assert taken["id"] == item["id"]


def test_a_lease_granted_after_the_look_up_still_wins_the_claim(
    app_client: tuple[Any, Any], monkeypatch: Any
) -> None:
    """The claim's UPDATE checks the lease itself: with the look-up before it blind
    (as when a lease is granted in between), the item is still not handed out."""
    client, app = app_client
    app.state.queue_loop.stop()
    kwargs = {"region": "us-east-1", "image_id": "ami-1", "capacity": {"limit": 2, "offers": STD}}
    body = {"name": "aws", "launcher": "EC2", "kwargs": kwargs, "dispatch": "daemon"}
    ok(client.post(P + "/providers", json=body), 201)
    reg = {"providerName": "aws", "instanceId": "i-1", "host": "h", "queues": []}
    wid = ok(client.post(P + "/workers", json=reg), 201)["workerId"]
    ok(client.post(P + "/capacity/leases", json={"cpus": 2}), 201)
    item = ok(client.post(P + "/providers/aws/work", json={"command": "true"}), 201)
    monkeypatch.setattr(store, "leased", lambda *a, **k: False)
    with app.state.sessionmaker() as session:
        worker = session.get(Worker, wid)
        assert worker is not None
        assert store.try_claim(session, worker) is None
    assert ok(client.get(P + f"/work/{item['id']}"))["state"] == "queued"


def _race(client: Client, ns: str, k: int) -> str:
    """One round: a worker, an item for it, then its claim and a lease on the same
    provider sent together. Which won (or ``both``, the fault)."""
    name = f"race-{k}"
    kwargs = {
        "region": "us-east-1",
        "image_id": "ami-1",
        "capacity": {"limit": 1, "offers": STD},  # the worker is the one unit: no launch
    }
    client.create_provider_row(
        {"name": name, "launcher": "EC2", "kwargs": kwargs, "dispatch": "daemon"}
    )
    w = client.register(name, f"i-{k}", host=f"h{k}")["workerId"]
    item = client.submit_work(name, "true")
    start = threading.Barrier(2)
    lease: list[dict[str, Any]] = []

    def claim() -> None:
        start.wait()
        client.poll_work(w)

    def take() -> None:
        start.wait()
        body = {"providers": [name], "ttlSeconds": 60}
        lease.append(client.request("POST", f"/api/namespaces/{ns}/capacity/leases", body))

    threads = [threading.Thread(target=claim), threading.Thread(target=take)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    running = client.get_work(item["id"])["state"] == "running"
    granted = lease[0]["state"] == "granted" and lease[0].get("workerId") == w
    return "both" if running and granted else "claim" if running else "lease" if granted else "-"


def test_a_claim_and_a_lease_racing_for_one_idle_worker_never_both_win(
    fresh_namespace: tuple[str, Client],
) -> None:
    """The claim and the grant each check the other under the worker's row lock
    (``store.lock_worker``): sent at the same moment, round after round, the item is
    running on the worker or the lease holds it, never both."""
    ns, client = fresh_namespace
    rounds = [_race(client, ns, k) for k in range(25)]
    assert "both" not in rounds, rounds


def test_a_claim_answers_from_what_it_wrote_with_no_read_after_its_commit(
    app_client: tuple[Any, Any],
) -> None:
    """The item a claim hands out carries the state, worker and start time its UPDATE
    wrote, set without a read after the commit: such a read may take another pooled
    connection, which over SQLite may still hold a snapshot older than the item."""
    from sqlalchemy import event

    client, app = app_client
    app.state.queue_loop.stop()
    body = {"name": "aws", "launcher": "EC2", "kwargs": {"region": "us-east-1"}}
    ok(client.post(P + "/providers", json={**body, "dispatch": "daemon"}), 201)
    reg = {"providerName": "aws", "instanceId": "i-1", "host": "h", "queues": []}
    wid = ok(client.post(P + "/workers", json=reg), 201)["workerId"]
    item = ok(client.post(P + "/providers/aws/work", json={"command": "true"}), 201)

    statements: list[str] = []

    def executed(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        statements.append(statement)

    def committed(_conn: Any) -> None:
        statements.append("COMMIT")

    engine = app.state.engine
    event.listen(engine, "before_cursor_execute", executed)
    event.listen(engine, "commit", committed)
    try:
        with app.state.sessionmaker() as session:
            worker = session.get(Worker, wid)
            assert worker is not None
            statements.clear()
            picked = store.try_claim(session, worker)
            assert picked is not None
            handed = (picked.id, picked.state, picked.worker_id, picked.started_at)
    finally:
        event.remove(engine, "before_cursor_execute", executed)
        event.remove(engine, "commit", committed)
    assert statements[-1] == "COMMIT", statements
    assert handed[:3] == (item["id"], "running", wid)
    with app.state.sessionmaker() as session:
        row = session.get(WorkItem, item["id"])
        assert row is not None
        assert (row.id, row.state, row.worker_id, row.started_at) == handed
