"""A server that starts under a fleet (controlplane/server/fleet/warmup.py) knows its
registered workers, their owners and the providers with nothing queued before the
first request, so the fleet's polls after a restart take the hot path."""

from __future__ import annotations

from pathlib import Path

from dreamlake.controlplane.server.app import create_app
from dreamlake.controlplane.server.fleet import warmup
from dreamlake.controlplane.server.fleet.heartbeats import Heartbeats
from dreamlake.controlplane.server.fleet.queued import QueueHints
from dreamlake.controlplane.server.settings import Settings
from fastapi.testclient import TestClient
from sqlalchemy.orm import sessionmaker

NS = "/api/namespaces/default"


def _register(tc: TestClient, headers: dict[str, str], provider: str, instance: str) -> str:
    body = {"providerName": provider, "instanceId": instance, "host": "h", "queues": []}
    out = tc.post(f"{NS}/workers", json=body, headers=headers)
    assert out.status_code == 201, out.text
    return str(out.json()["workerId"])


def test_a_restarted_server_knows_its_fleet_before_the_first_request(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = create_app(Settings.from_env(data_dir=data))
    with TestClient(first) as tc:
        headers = {"Authorization": f"Bearer {(data / 'admin.token').read_text().strip()}"}
        idle = _register(tc, headers, "idle", "i-1")
        busy = _register(tc, headers, "busy", "i-2")
        gone = _register(tc, headers, "idle", "i-3")
        assert tc.delete(f"{NS}/workers/{gone}", headers=headers).status_code in (200, 204)
        out = tc.post(f"{NS}/providers/busy/work", json={"command": "true"}, headers=headers)
        assert out.status_code == 201, out.text
    first.state.engine.dispose()

    again = create_app(Settings.from_env(data_dir=data))
    with TestClient(again):
        hb, hints = again.state.heartbeats, again.state.queue_hints
        ns_id = hb._known[idle].namespace_id
        assert (hb.provider_of(idle), hb.provider_of(busy), hb.provider_of(gone)) == (
            "idle",
            "busy",
            None,
        )
        assert again.state.worker_owners[idle] == ("idle", "i-1")
        assert gone not in again.state.worker_owners
        assert hints.known_empty(f"work:{ns_id}:idle")
        assert not hints.known_empty(f"work:{ns_id}:busy")  # its item waits: the route claims
    again.state.engine.dispose()


def test_a_submit_between_the_read_and_the_marks_wins() -> None:
    hints = QueueHints()
    hb = Heartbeats(sessionmaker(), 1.0)  # only its memory is used: no database
    hb.know("w2", 1, "q-as-a-request-saw-it")
    generations = hints.generations()  # before the read
    fleet = warmup.Fleet([("w1", 1, "p", "i-1"), ("w2", 1, "q", "i-2")], set())
    hints.on_key("work:1:p")  # a submit for p lands while the read runs
    owners: dict[str, tuple[str, str]] = {"w2": ("q", "i-2")}
    assert warmup.apply(fleet, hb, hints, owners, generations) == 2
    assert (hb.provider_of("w1"), hb.provider_of("w2")) == ("p", "q-as-a-request-saw-it")
    assert not hints.known_empty("work:1:p")  # the submit wins: the next poll looks
    assert hints.known_empty("work:1:q")
    assert owners == {"w1": ("p", "i-1"), "w2": ("q", "i-2")}


def test_a_worker_this_server_never_saw_makes_it_read_the_fleet_once(tmp_path: Path) -> None:
    """The daemons of a replica that died move here: the first request about a worker
    this server does not know reads the fleet again, which teaches it every worker
    registered elsewhere; requests that miss together share that one read, and a
    worker that is nowhere does not read it again before ``RELEARN_SECONDS``."""
    import asyncio
    import uuid

    data = tmp_path / "data"
    here = create_app(Settings.from_env(data_dir=data))
    elsewhere = create_app(Settings.from_env(data_dir=data))  # the other replica
    with TestClient(here) as tc, TestClient(elsewhere) as other:
        headers = {"Authorization": f"Bearer {(data / 'admin.token').read_text().strip()}"}
        moved = [_register(other, headers, f"p{k}", f"i-{k}") for k in range(30)]
        hb, relearn = here.state.heartbeats, here.state.relearn
        # the token is known here already (the hot path answers only cached tokens)
        assert tc.get(f"{NS}/providers/p0/claims", headers=headers).status_code == 200
        assert all(hb.provider_of(w) is None for w in moved) and relearn.reads == 0
        out = tc.post(f"{NS}/workers/{moved[0]}/heartbeat", headers=headers)
        assert out.status_code == 200, out.text
        assert relearn.reads == 1
        assert all(hb.provider_of(w) == f"p{k}" for k, w in enumerate(moved))
        assert here.state.worker_owners[moved[7]] == ("p7", "i-7")
        nowhere = str(uuid.uuid4())
        assert tc.post(f"{NS}/workers/{nowhere}/heartbeat", headers=headers).status_code == 404
        assert relearn.reads == 1  # read under RELEARN_SECONDS ago: the route answered

        async def together() -> None:
            relearn._next = 0.0  # as if the last read were old
            await asyncio.gather(*(relearn() for _ in range(20)))

        tc.portal.call(together)  # type: ignore[union-attr]
        assert relearn.reads == 2
    here.state.engine.dispose()
    elsewhere.state.engine.dispose()
