"""Launching, asking and terminating hold no database connection while the launcher
works (a cloud call can take minutes; a pooled connection held meanwhile starves
the server, and over PostgreSQL sits idle in a transaction); the queue loop counts
a worker as seen by its beats not written yet. In process, with a launcher TEST
DOUBLE (it records how many pooled connections were checked out when called)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from dreamlake.controlplane.db import utcnow
from dreamlake.controlplane.models import Worker
from dreamlake.controlplane.queues.loop import QueueLoop
from dreamlake.controlplane.server.runtime import heartbeats_of
from launch_harness import P, ok
from sqlalchemy import update


class PoolWatchingLauncherDouble:
    """Stands in for a launcher: notes the pool's checked-out connections per call."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.held: dict[str, list[int]] = {"launch": [], "describe": [], "terminate": []}
        self.n = 0

    def _note(self, what: str) -> None:
        self.held[what].append(self.app.state.engine.pool.checkedout())

    def launch(self, order: Any) -> dict[str, Any]:
        self._note("launch")
        start, self.n = self.n, self.n + order.count
        return {
            "instances": [{"id": f"fake-{i}", "state": "pending"} for i in range(start, self.n)]
        }

    def describe(self, order: Any, ids: Any) -> dict[str, str]:
        self._note("describe")
        return dict.fromkeys(ids, "running")

    def terminate(self, order: Any, ids: Any) -> None:
        self._note("terminate")


def _provider(client: Any, app: Any) -> PoolWatchingLauncherDouble:
    app.state.queue_loop.stop()  # decide by hand, one pass at a time
    double = PoolWatchingLauncherDouble(app)
    app.state.launch_backends = {"EC2": double}
    body = {"name": "aws", "launcher": "EC2", "kwargs": {"region": "r", "image_id": "ami-1"}}
    ok(client.post(P + "/providers", json=body), 201)  # EC2: daemon dispatch
    return double


def test_no_connection_is_held_while_the_launcher_works(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    double = _provider(client, app)
    out = ok(client.post(P + "/launch", json={"provider": "aws"}), 201)
    ok(client.get(P + "/instances"))
    ok(client.delete(P + f"/instances/{out['instances'][0]['id']}"))
    assert double.held == {"launch": [0], "describe": [0], "terminate": [0]}

    # the queue loop's launches too
    ok(client.post(P + "/queues", json={"name": "gpu", "provider": "aws", "max": 1}), 201)
    ok(client.post(P + "/providers/aws/work", json={"command": "true", "queue": "gpu"}), 201)
    QueueLoop(app, tick=0.1).once()
    assert double.held["launch"] == [0, 0]


def test_the_queue_loop_counts_unwritten_beats(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    double = _provider(client, app)
    ok(client.post(P + "/queues", json={"name": "gpu", "provider": "aws", "idleSeconds": 0}), 201)
    ok(client.post(P + "/providers/aws/work", json={"command": "true", "queue": "gpu"}), 201)
    loop = QueueLoop(app, tick=0.1)
    loop.once()
    assert double.n == 1
    reg = ok(
        client.post(
            P + "/workers",
            json={"providerName": "aws", "instanceId": "fake-0", "queues": ["gpu"]},
        ),
        201,
    )
    wid = reg["workerId"]
    item = ok(client.get(P + f"/workers/{wid}/work"))
    ok(client.post(P + f"/workers/{wid}/work/{item['id']}/result", json={"exitCode": 0}))
    # the database's last-seen is old; this server holds a beat it has not written yet
    with app.state.sessionmaker() as s:
        s.execute(
            update(Worker).where(Worker.id == wid).values(last_seen=utcnow() - timedelta(hours=1))
        )
        s.commit()
    heartbeats_of(app)._seen[wid] = utcnow()
    loop.once()  # a live, idle worker past idleSeconds above min 0: terminated
    assert double.held["terminate"] == [0]
    status = ok(client.get(P + "/queues/gpu/status"))
    assert [e["action"] for e in status["events"]][-1] == "terminate"


class SlowLauncherDouble(PoolWatchingLauncherDouble):
    """Stands in for a launcher that takes a while: a retry arrives meanwhile."""

    def __init__(self, app: Any, during: Any) -> None:
        super().__init__(app)
        self.during = during
        self.answers: list[int] = []

    def launch(self, order: Any) -> dict[str, Any]:
        if self.n == 0:  # the first call: a retry of the same token while it works
            self.answers.append(self.during().status_code)
        return super().launch(order)


def test_a_retry_while_the_first_launch_works_does_not_launch_again(
    app_client: tuple[Any, Any],
) -> None:
    client, app = app_client
    _provider(client, app)
    body = {"provider": "aws", "clientToken": "tok-1"}
    double = SlowLauncherDouble(app, lambda: client.post(P + "/launch", json=body))
    app.state.launch_backends = {"EC2": double}
    first = ok(client.post(P + "/launch", json=body), 201)
    assert double.answers == [409] and double.n == 1  # the retry waited: one launch
    assert client.post(P + "/launch", json={**body, "provider": "aws"}).status_code == 201
    again = ok(client.post(P + "/launch", json=body), 201)
    assert again["replayed"] is True and again["instances"] == first["instances"]
    assert double.n == 1


class FailingOnceLauncherDouble(PoolWatchingLauncherDouble):
    """Stands in for a launcher that fails the first time."""

    def launch(self, order: Any) -> dict[str, Any]:
        if self.held["launch"] == []:
            self._note("launch")
            raise RuntimeError("the cloud said no, this time")
        return super().launch(order)


def test_a_launch_that_failed_may_be_retried_at_once(app_client: tuple[Any, Any]) -> None:
    client, app = app_client
    _provider(client, app)
    double = FailingOnceLauncherDouble(app)
    app.state.launch_backends = {"EC2": double}
    body = {"provider": "aws", "clientToken": "tok-2"}
    assert client.post(P + "/launch", json=body).status_code == 502
    out = ok(client.post(P + "/launch", json=body), 201)
    assert double.n == 1 and len(out["instances"]) == 1
