"""A granted lease whose unit goes away is pending again with the reason, and
renewing it answers 202 ``pending``, never 200 as if it were granted.

* On a real ``lakeshore serve`` with real nymph daemons: the worker a lease holds is
  killed (SIGKILL: cut off, its heartbeats stop) — the lease reads ``pending`` with
  why, renewing answers 202; a new worker comes up and the reconcile loop grants the
  lease on it; that one is stopped (SIGTERM: it deregisters) — pending again.
* In process (the launch through a launcher TEST DOUBLE): the daemon of an instance
  launched for a lease deregisters — the lease is pending again and the instance
  launched for it is terminated.
"""

from __future__ import annotations

from typing import Any

from capacity_doubles import RefusingCloudDouble
from launch_harness import P, ok
from tracking_check import wait

STD = [{"name": "std", "cpus": 4, "memoryGb": 16}]
LIVE = 2.0


def test_a_lease_whose_worker_is_killed_or_stops_is_pending_again(
    start_server: Any, start_nymph: Any
) -> None:
    srv = start_server(live_seconds=LIVE, env={"LAKESHORE_QUEUE_TICK": "0.5"})
    api = srv.admin
    # direct dispatch: no launch can serve a lease, only an idle worker
    kwargs = {"region": "us-east-1", "image_id": "ami-1", "capacity": {"limit": 4, "offers": STD}}
    body = {"name": "box", "launcher": "EC2", "kwargs": kwargs, "dispatch": "direct"}
    api.request("POST", P + "/providers", body)
    leases = P + "/capacity/leases"

    a = start_nymph(srv.url, srv.admin_token, provider="box", instance_id="a", queues="")
    assert wait(lambda: api.request("GET", P + "/providers/box/claims")["live"] == 1, 30)
    lease = api.request("POST", leases, {"cpus": 2, "ttlSeconds": 120})
    assert (lease["state"], lease["instanceId"]) == ("granted", "a"), lease
    lid = lease["id"]

    a.kill9()  # cut off: no deregistration, its heartbeats just stop

    def pending() -> Any:
        got = api.request("GET", f"{leases}/{lid}")
        return got if got["state"] == "pending" else None

    got = wait(pending, 10 * LIVE)
    assert got, api.request("GET", f"{leases}/{lid}")
    assert "its worker a has not been heard from" in got["reason"], got
    assert got["workerId"] is None and got["instanceId"] is None
    renewed = _renew(srv, lid)
    assert renewed.status == 202, renewed
    assert renewed.body["state"] == "pending" and "its worker a" in renewed.body["reason"]

    # a unit frees up: the loop grants the lease there
    b = start_nymph(srv.url, srv.admin_token, provider="box", instance_id="b", queues="")

    def granted_on_b() -> Any:
        got = api.request("GET", f"{leases}/{lid}")
        return got if got["state"] == "granted" and got["instanceId"] == "b" else None

    assert wait(granted_on_b, 30), api.request("GET", f"{leases}/{lid}")
    again = _renew(srv, lid)
    assert again.status == 200 and again.body["state"] == "granted", again

    assert b.terminate() == 0  # stopped: it deregisters
    got = wait(pending, 10)
    assert got and "its worker b deregistered" in got["reason"], got
    assert _renew(srv, lid).status == 202
    listed = api.request("GET", leases)["leases"]
    assert [(x["id"], x["state"]) for x in listed] == [(lid, "pending")]


class _Answer:
    def __init__(self, status: int, body: Any) -> None:
        self.status, self.body = status, body

    def __repr__(self) -> str:
        return f"{self.status} {self.body}"


def _renew(srv: Any, lease_id: str) -> _Answer:
    import json
    import urllib.request

    req = urllib.request.Request(
        f"{srv.url}{P}/capacity/leases/{lease_id}/renew",
        data=b"{}",
        method="POST",
        headers={
            "Authorization": f"Bearer {srv.admin_token}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return _Answer(r.status, json.loads(r.read()))


class TokenKeepingDouble(RefusingCloudDouble):
    """The launcher TEST DOUBLE, keeping the instance tokens a launch hands out."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[str] = []

    def launch(self, order: Any) -> dict[str, Any]:
        self.tokens.extend(order.bootstrap.tokens if order.bootstrap else ())
        return super().launch(order)


def test_a_lease_whose_launched_daemon_goes_away_is_pending_and_its_instance_ends(
    app_client: tuple[Any, Any],
) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    double = TokenKeepingDouble()
    app.state.launch_backends = {"EC2": double}
    kwargs = {"region": "us-east-1", "image_id": "ami-1", "capacity": {"limit": 1, "offers": STD}}
    body = {"name": "aws", "launcher": "EC2", "kwargs": kwargs, "dispatch": "daemon"}
    ok(client.post(P + "/providers", json=body), 201)
    lease = ok(client.post(P + "/capacity/leases", json={"cpus": 2}), 201)
    assert (lease["via"], lease["instanceId"]) == ("launch", "fake-aws-0")
    lid = lease["id"]
    # its daemon has not registered yet: starting, still granted
    assert ok(client.get(P + f"/capacity/leases/{lid}"))["state"] == "granted"
    # its daemon registers with the instance's own token, as a launched daemon does
    reg = {"providerName": "aws", "instanceId": "fake-aws-0", "host": "h", "queues": []}
    mine = {"Authorization": f"Bearer {double.tokens[0]}"}
    wid = ok(client.post(P + "/workers", json=reg, headers=mine), 201)["workerId"]
    assert ok(client.get(P + f"/capacity/leases/{lid}"))["state"] == "granted"
    assert client.delete(P + f"/workers/{wid}", headers=mine).status_code in (200, 204)
    got = ok(client.get(P + f"/capacity/leases/{lid}"))
    assert got["state"] == "pending", got
    assert "the daemon on fake-aws-0 deregistered" in got["reason"], got
    renewed = client.post(P + f"/capacity/leases/{lid}/renew", json={})
    assert renewed.status_code == 202 and renewed.json()["state"] == "pending"
    rows = ok(client.get(P + "/instances", params={"all": "true", "live": "false"}))["instances"]
    (row,) = [r for r in rows if r["id"] == "fake-aws-0"]
    assert row["state"] == "terminated" and row["terminatedAt"] is not None


def test_a_daemon_gone_from_an_earlier_instance_of_the_same_id_is_not_the_leases(
    app_client: tuple[Any, Any],
) -> None:
    """An id used again (an SSH host is its instance's id): the deregistered worker an
    earlier instance left under it is not the daemon of the instance launched now."""
    client, app = app_client
    app.state.queue_loop.stop()
    app.state.launch_backends = {"EC2": RefusingCloudDouble()}
    kwargs = {"region": "us-east-1", "image_id": "ami-1", "capacity": {"limit": 1, "offers": STD}}
    body = {"name": "aws", "launcher": "EC2", "kwargs": kwargs, "dispatch": "daemon"}
    ok(client.post(P + "/providers", json=body), 201)
    reg = {"providerName": "aws", "instanceId": "fake-aws-0", "host": "h", "queues": []}
    earlier = ok(client.post(P + "/workers", json=reg), 201)["workerId"]
    assert client.delete(P + f"/workers/{earlier}").status_code in (200, 204)
    lease = ok(client.post(P + "/capacity/leases", json={"cpus": 2}), 201)
    assert lease["instanceId"] == "fake-aws-0"
    got = ok(client.get(P + f"/capacity/leases/{lease['id']}"))
    assert got["state"] == "granted", got  # its own daemon is still starting
