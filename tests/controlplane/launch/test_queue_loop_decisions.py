"""The reconcile loop's decisions, in process, with a launcher TEST DOUBLE (it
records calls and answers like a cloud that always succeeds, or always fails):
launch for pending work up to max, wait at max, back off from a failing provider."""

from __future__ import annotations

from typing import Any

from dreamlake.controlplane.queues.loop import QueueLoop
from launch_harness import P, ok


class LauncherDouble:
    """Stands in for a launcher module: ``launch``, ``describe``, ``terminate``."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.launched: list[int] = []
        self.terminated: list[str] = []

    def launch(self, order: Any) -> dict[str, Any]:
        if self.fail:
            raise RuntimeError("the cloud said no")
        start = len(self.launched)
        self.launched.extend(range(start, start + order.count))
        return {
            "instances": [
                {"id": f"fake-{n}", "state": "pending"} for n in range(start, start + order.count)
            ]
        }

    def describe(self, order: Any, ids: Any) -> dict[str, str]:
        return dict.fromkeys(ids, "running")

    def terminate(self, order: Any, ids: Any) -> None:
        self.terminated.extend(ids)


def _setup(client: Any, app: Any, double: LauncherDouble) -> QueueLoop:
    app.state.queue_loop.stop()  # decide by hand, one pass at a time
    app.state.launch_backends = {"EC2": double}
    kwargs = {"region": "r", "image_id": "ami-1"}
    body = {"name": "aws", "launcher": "EC2", "kwargs": kwargs}
    ok(client.post(P + "/providers", json=body), 201)
    ok(client.post(P + "/queues", json={"name": "gpu", "provider": "aws", "max": 2}), 201)
    for n in range(3):
        body = {"command": f"echo {n}", "queue": "gpu"}
        ok(client.post(P + "/providers/aws/work", json=body), 201)
    return QueueLoop(app, tick=0.1)


def test_launch_up_to_max_then_wait(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    double = LauncherDouble()
    loop = _setup(client, app, double)
    assert loop.once() is True
    assert double.launched == [0, 1]
    loop.once()
    loop.once()
    assert double.launched == [0, 1]  # launched but not claimed yet: they count as free
    status = ok(client.get(P + "/queues/gpu/status"))
    assert status["pending"] == 3 and [i["id"] for i in status["instances"]] == ["fake-0", "fake-1"]
    assert [e["action"] for e in status["events"]] == ["launch", "at-max"]
    assert status["events"][0]["detail"].startswith("2 worker(s) for 3 pending item(s), 0 free")
    assert status["events"][0]["by"] == loop.holder


def test_a_failing_provider_is_asked_again_later(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    double = LauncherDouble(fail=True)
    loop = _setup(client, app, double)
    loop.once()
    loop.once()  # within the back-off: not asked again
    status = ok(client.get(P + "/queues/gpu/status"))
    assert [e["action"] for e in status["events"]] == ["error"]
    assert "the cloud said no" in status["events"][0]["detail"]
    assert loop._backoff  # the queue waits before the next try


def test_queue_validation(app_client: tuple[Any, Any]) -> None:
    client, _ = app_client
    r = client.post(P + "/queues", json={"name": "q", "provider": "ghost"})
    assert r.status_code == 404
    ok(client.post(P + "/providers", json={"name": "p", "launcher": "EC2"}), 201)
    r = client.post(P + "/queues", json={"name": "q", "provider": "p", "min": 3, "max": 1})
    assert r.status_code == 422 and "below min" in r.json()["detail"]
    r = client.post(P + "/queues", json={"name": "q", "provider": "p", "idleAction": "explode"})
    assert r.status_code == 422
    ok(client.post(P + "/queues", json={"name": "q", "provider": "p"}), 201)
    assert client.post(P + "/queues", json={"name": "q", "provider": "p"}).status_code == 409
    ok(client.patch(P + "/queues/q", json={"max": 5}))
    assert [q["max"] for q in ok(client.get(P + "/queues"))] == [5]
    ok(client.delete(P + "/queues/q"))
    assert client.get(P + "/queues/q/status").status_code == 404


class SuspendingLauncherDouble(LauncherDouble):
    """A launcher TEST DOUBLE that can also stop and start its instances."""

    def __init__(self) -> None:
        super().__init__()
        self.resumed: list[str] = []
        self.stopped: set[str] = set()

    def describe(self, order: Any, ids: Any) -> dict[str, str]:
        return {i: "stopped" if i in self.stopped else "running" for i in ids}

    def suspend(self, order: Any, ids: Any) -> None:
        self.stopped.update(ids)

    def resume(self, order: Any, ids: Any) -> None:
        self.resumed.extend(ids)
        self.stopped.difference_update(ids)


def _backdate(app: Any, hours: float, *, started: bool) -> None:
    from datetime import timedelta

    from dreamlake.controlplane.db import utcnow
    from dreamlake.controlplane.launch.models import Instance
    from sqlalchemy import update

    then = utcnow() - timedelta(hours=hours)
    values: dict[str, Any] = {"created_at": then}
    if started:
        values["started_at"] = then
    with app.state.sessionmaker() as s:
        s.execute(update(Instance).values(**values))
        s.commit()


def test_an_instance_whose_daemon_never_registers_is_failed_with_the_reason(
    app_client: tuple[Any, Any], monkeypatch: Any
) -> None:
    monkeypatch.setenv("LAKESHORE_QUEUE_START_TIMEOUT", "60")
    client, app = app_client
    double = LauncherDouble()
    loop = _setup(client, app, double)
    loop.once()
    assert double.launched == [0, 1]
    loop.once()
    assert double.terminated == []  # within the start timeout: still starting
    _backdate(app, 2, started=True)
    loop.once()
    assert sorted(double.terminated) == ["fake-0", "fake-1"]
    rows = ok(client.get(P + "/instances", params={"all": "true", "live": "false"}))["instances"]
    assert {r["state"] for r in rows if r["id"] in ("fake-0", "fake-1")} == {"failed"}
    assert all("no daemon registered within 60s" in r["reason"] for r in rows[:2])
    events = ok(client.get(P + "/queues/gpu/status"))["events"]
    assert [e["action"] for e in events].count("fail") == 2


def test_the_start_timeout_counts_from_the_resume(
    app_client: tuple[Any, Any], monkeypatch: Any
) -> None:
    monkeypatch.setenv("LAKESHORE_QUEUE_START_TIMEOUT", "60")
    client, app = app_client
    double = SuspendingLauncherDouble()
    loop = _setup(client, app, double)
    loop.once()
    double.stopped = {"fake-0", "fake-1"}
    ok(client.get(P + "/instances"))  # the live look records them stopped
    _backdate(app, 2, started=True)  # launched (and last started) two hours ago
    loop.once()  # pending work: the stopped instances are resumed, started now
    assert sorted(double.resumed) == ["fake-0", "fake-1"]
    loop.once()
    assert double.terminated == []  # two hours after the launch, seconds after the resume
    rows = ok(client.get(P + "/instances", params={"live": "false"}))["instances"]
    assert all(r["startedAt"] > r["createdAt"] for r in rows)


def test_a_terminated_instance_leaves_the_count_at_once(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    double = LauncherDouble()
    loop = _setup(client, app, double)
    loop.once()
    body = {"providerName": "aws", "instanceId": "fake-0", "queues": ["gpu"]}
    wid = ok(client.post(P + "/workers", json=body), 201)["workerId"]
    assert ok(client.get(P + "/providers/aws/claims"))["live"] == 1
    ok(client.delete(P + "/instances/fake-0"))
    claims = ok(client.get(P + "/providers/aws/claims"))
    assert claims["live"] == 0 and claims["instances"] == []
    assert client.post(P + f"/workers/{wid}/heartbeat").status_code == 404
    loop.once()  # three items wait and only fake-1 may still start: one more launch
    assert double.launched == [0, 1, 2]


def test_an_orphan_is_listed_told_to_stop_and_gone(app_client: tuple[Any, Any]) -> None:
    """A live worker holding an instance token that no live instance row holds is an
    orphan: listed as one, its token revoked, its instance stopped through the
    launcher; a daemon registered with a person's token never is."""
    from datetime import timedelta

    from dreamlake.controlplane.db import utcnow
    from dreamlake.controlplane.launch.tokens import _mint
    from dreamlake.controlplane.models import Worker
    from fastapi.testclient import TestClient
    from sqlalchemy import update

    client, app = app_client
    double = LauncherDouble()
    loop = _setup(client, app, double)
    with app.state.sessionmaker() as s:
        stray, _ = _mint(s, 1, "instance aws stray-0", "aws")
        s.commit()
    daemon = TestClient(
        app, base_url="http://127.0.0.1:7878", headers={"Authorization": f"Bearer {stray}"}
    )
    body = {"providerName": "aws", "instanceId": "stray-host", "queues": ["gpu"]}
    wid = ok(daemon.post(P + "/workers", json=body), 201)["workerId"]
    by_hand = {"providerName": "aws", "instanceId": "by-hand", "queues": ["other"]}
    ok(client.post(P + "/workers", json=by_hand), 201)

    listed = ok(client.get(P + "/instances", params={"live": "false"}))["instances"]
    (orphan,) = [i for i in listed if i["state"] == "orphan"]
    assert orphan["id"] == "stray-host" and orphan["details"]["workerId"] == wid
    assert "no instance row holds" in orphan["reason"]
    loop.once()  # the work is not counted as served by the orphan: two launches
    assert double.launched == [0, 1]
    assert "stray-host" in double.terminated and "by-hand" not in double.terminated
    assert daemon.get(P + "/providers/aws/claims").status_code == 401  # token revoked
    loop.once()
    assert double.terminated.count("stray-host") == 1  # told once, not every tick
    # gone once its beats stop: no longer listed
    with app.state.sessionmaker() as s:
        old = utcnow() - timedelta(minutes=5)
        s.execute(update(Worker).where(Worker.id == wid).values(last_seen=old))
        s.commit()
    app.state.heartbeats._seen.pop(wid, None)
    listed = ok(client.get(P + "/instances", params={"live": "false"}))["instances"]
    assert [i for i in listed if i["state"] == "orphan"] == []


def test_a_daemon_that_does_not_come_back_after_a_resume_is_failed(
    app_client: tuple[Any, Any], monkeypatch: Any
) -> None:
    """A worker is matched to its instance by identity, with no clock compared: a
    resume forgets the registrations of the start before it, so a daemon that
    registered before the suspend and never again does not keep the instance."""
    monkeypatch.setenv("LAKESHORE_QUEUE_START_TIMEOUT", "60")
    client, app = app_client
    double = SuspendingLauncherDouble()
    loop = _setup(client, app, double)
    loop.once()
    for n in (0, 1):
        body = {"providerName": "aws", "instanceId": f"fake-{n}", "queues": ["gpu"]}
        ok(client.post(P + "/workers", json=body), 201)
    double.stopped = {"fake-0", "fake-1"}
    ok(client.get(P + "/instances"))  # the live look records them stopped
    loop.once()  # pending work and no free worker: resumed
    assert sorted(double.resumed) == ["fake-0", "fake-1"]
    assert ok(client.get(P + "/providers/aws/claims"))["instances"] == []
    loop.once()
    assert double.terminated == []  # within the start timeout of the resume
    _backdate(app, 2, started=True)
    loop.once()
    assert sorted(double.terminated) == ["fake-0", "fake-1"]
    rows = ok(client.get(P + "/instances", params={"all": "true", "live": "false"}))["instances"]
    assert all("no daemon registered within 60s" in r["reason"] for r in rows[:2])
