"""``lakeshore capacity`` lists what exists: offers are what the provider really
launches (its kwargs, else the launcher's own default; an SSH pool's hosts, never
a kwarg's name), and a provider's instance limit is never exceeded by what the
control plane launches (the launch is refused with why; the launches go through a
launcher TEST DOUBLE). On an SSH pool a host is one unit: its daemon and a direct
run there are not two."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from capacity_doubles import RefusingCloudDouble
from dreamlake.controlplane.capacity.offers import limit_of, offers_of
from dreamlake.controlplane.capacity.service import units
from launch_harness import P, ok

C = P + "/capacity"


def test_offers_are_what_the_provider_launches() -> None:
    from dreamlake.controlplane.launchers.ec2 import DEFAULT_INSTANCE_TYPE

    def names(launcher: str, kwargs: dict[str, Any]) -> list[str]:
        return [o.name for o in offers_of("p", launcher, kwargs)]

    assert names("EC2", {"instance_type": "g5.xlarge", "host": "10.0.0.5"}) == ["g5.xlarge"]
    assert names("EC2", {"region": "us-east-1"}) == [DEFAULT_INSTANCE_TYPE]  # what it launches
    assert names("SSH", {"host": "box-2"}) == ["box-2"]
    assert names("SSH", {"hosts": ["a:22", "b:22"]}) == ["a:22", "b:22"]
    # no host: nothing to launch on, and no offer named after the kwarg
    for kwargs in ({}, {"hosts": []}, {"host": ""}, {"hosts": "a,b"}):
        assert names("SSH", kwargs) == [], kwargs
        assert limit_of("SSH", kwargs) == 0
    declared = {"capacity": {"offers": [{"name": "big", "cpus": 64}]}, "host": "box"}
    assert names("SSH", declared) == ["big"]


def test_a_host_is_one_unit_of_an_ssh_pool() -> None:
    def row(iid: str) -> Any:
        return SimpleNamespace(instance_id=iid)

    daemon, run = row("root@h:22"), row("root@h:22/lakeshore-p-x-0")
    assert units("SSH", [daemon, run], []) == 1
    assert units("SSH", [daemon], [row("root@h:22"), row("root@g:22")]) == 2
    assert units("EC2", [row("i-1"), row("i-2")], [row("i-1")]) == 2


def test_a_launch_past_the_limit_is_refused(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    app.state.queue_loop.stop()
    double = RefusingCloudDouble()
    app.state.launch_backends = {"EC2": double}
    kwargs = {"region": "us-east-1", "instance_type": "g5.xlarge", "capacity": {"limit": 1}}
    body = {"name": "aws", "launcher": "EC2", "kwargs": kwargs, "dispatch": "daemon"}
    ok(client.post(P + "/providers", json=body), 201)
    ok(client.post(P + "/launch", json={"provider": "aws"}), 201)
    again = client.post(P + "/launch", json={"provider": "aws"})
    assert again.status_code == 409, again.text
    assert again.json()["error"] == "limit_reached"
    assert "room for 0 more unit(s)" in again.json()["detail"]
    assert len(double.launched) == 1  # nothing more was launched
    (aws,) = [p for p in ok(client.get(C))["providers"] if p["name"] == "aws"]
    assert (aws["instances"], aws["limit"]) == (1, 1)
    assert [o["offer"] for o in aws["offers"]] == ["g5.xlarge"]
    # a lease cannot get past it either: pending, limit-reached
    lease = ok(client.post(C + "/leases", json={}), 202)
    assert "limit-reached" in lease["reason"]
    # the instance's daemon registers: still one unit
    reg = {"providerName": "aws", "instanceId": "fake-aws-0", "host": "h", "queues": []}
    ok(client.post(P + "/workers", json=reg), 201)
    (aws,) = [p for p in ok(client.get(C))["providers"] if p["name"] == "aws"]
    assert (aws["instances"], aws["limit"]) == (1, 1)
    # terminated: room again, and a launch for the waiting lease fits
    ok(client.delete(P + "/instances/fake-aws-0"))
    assert ok(client.post(P + "/launch", json={"provider": "aws", "count": 1}), 201)
    (aws,) = [p for p in ok(client.get(C))["providers"] if p["name"] == "aws"]
    assert aws["instances"] <= aws["limit"]
