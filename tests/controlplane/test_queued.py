"""Which providers have nothing queued, and the polls of one provider taking turns
to look (controlplane/server/fleet/queued.py): a submit wakes every poll held on its
provider, yet the database is asked about as often as there are items, not once per
poll, and an item only one worker's queues match still reaches that worker."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.models import Namespace
from dreamlake.controlplane.server.app import create_app
from dreamlake.controlplane.server.fleet.queued import QueueHints
from dreamlake.controlplane.server.settings import Settings
from fastapi.testclient import TestClient
from sqlalchemy import event, select

NS = "/api/namespaces/default"


def test_one_turn_per_key_on_each_loop() -> None:
    hints = QueueHints()

    async def turns() -> tuple[Any, Any, Any]:
        return hints.turn("work:1:a"), hints.turn("work:1:a"), hints.turn("work:1:b")

    a, again, b = asyncio.run(turns())
    assert a is again and a is not b
    fresh, _, _ = asyncio.run(turns())  # another loop: locks of its own
    assert fresh is not a


def test_the_turn_is_held_one_poll_at_a_time() -> None:
    async def run() -> list[str]:
        hints, seen = QueueHints(), []

        async def look(name: str) -> None:
            async with hints.turn("work:1:a"):
                seen.append(f"{name} in")
                await asyncio.sleep(0.01)
                seen.append(f"{name} out")

        await asyncio.gather(look("x"), look("y"))
        return seen

    assert asyncio.run(run()) == ["x in", "x out", "y in", "y out"]


class _Fleet:
    """The real app in process (SQLite), workers of provider ``lab`` holding
    long-polls, and a count of the claim's looks at the queue (its SELECT of queued
    items, in order) that the database is sent."""

    def __init__(self, tmp_path: Path) -> None:
        data = tmp_path / "data"
        self.app = create_app(Settings.from_env(data_dir=data))
        self.token = (data / "admin.token").read_text().strip()
        self.looks = 0

        def count(_conn: Any, _cur: Any, statement: str, *_a: Any) -> None:
            if "FROM work_items" in statement and "ORDER BY" in statement:
                self.looks += 1

        event.listen(self.app.state.engine, "before_cursor_execute", count)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def register(self, tc: TestClient, instance: str, queues: list[str]) -> str:
        body = {"providerName": "lab", "instanceId": instance, "host": "h", "queues": queues}
        out = tc.post(f"{NS}/workers", json=body, headers=self.headers)
        assert out.status_code == 201, out.text
        wid = str(out.json()["workerId"])
        assert tc.get(f"{NS}/workers/{wid}/work?wait=0", headers=self.headers).status_code == 204
        return wid

    def hold(self, tc: TestClient, wids: list[str], wait: float) -> dict[str, Any]:
        """Start a poll per worker in threads; returns worker id -> answer, filled in."""
        got: dict[str, Any] = {}

        def poll(wid: str) -> None:
            out = tc.get(f"{NS}/workers/{wid}/work?wait={wait:g}", headers=self.headers)
            got[wid] = out.json() if out.status_code == 200 else out.status_code

        for wid in wids:
            threading.Thread(target=poll, args=(wid,), daemon=True).start()
        with self.app.state.sessionmaker() as session:
            ns_id = session.scalar(select(Namespace.id).where(Namespace.name == "default"))
        key = f"work:{ns_id}:lab"
        ends = time.monotonic() + 10
        while self.app.state.notifier.event(key).waiting() < len(wids):
            assert time.monotonic() < ends, "the polls were not all held"
            time.sleep(0.02)
        return got

    def submit(self, tc: TestClient, queue: str | None = None) -> str:
        body: dict[str, Any] = {"command": "true"}
        if queue:
            body["queue"] = queue
        out = tc.post(f"{NS}/providers/lab/work", json=body, headers=self.headers)
        assert out.status_code == 201, out.text
        return str(out.json()["id"])


def _until(check: Any, seconds: float = 10) -> None:
    ends = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < ends
        time.sleep(0.02)


@pytest.mark.parametrize(("polls", "submits", "looks"), [(10, 1, 1), (6, 3, 6)])
def test_held_polls_woken_together_look_in_turn(
    tmp_path: Path, polls: int, submits: int, looks: int
) -> None:
    """Without turns every woken poll looked (measured: 10–12 looks for one submit
    to 10 polls, 16–25 for three submits to 6). With them, a claim that leaves
    nothing queued marks the provider empty, and the polls after it in turn wait on
    without a look."""
    fleet = _Fleet(tmp_path)
    with TestClient(fleet.app) as tc:
        wids = [fleet.register(tc, f"i-{k}", []) for k in range(polls)]
        got = fleet.hold(tc, wids, wait=3)
        fleet.looks = 0
        items = [fleet.submit(tc) for _ in range(submits)]
        _until(lambda: len(got) == polls)  # the items taken; the other waits ran out
        taken = [v["id"] for v in got.values() if isinstance(v, dict)]
        assert sorted(taken) == sorted(items)  # each item handed out, and once
        assert [v for v in got.values() if not isinstance(v, dict)] == [204] * (polls - submits)
        assert fleet.looks <= looks


def test_an_item_only_one_poll_matches_reaches_it(tmp_path: Path) -> None:
    fleet = _Fleet(tmp_path)
    with TestClient(fleet.app) as tc:
        plain = [fleet.register(tc, f"i-{k}", []) for k in range(4)]
        gpu = fleet.register(tc, "i-gpu", ["gpu"])
        got = fleet.hold(tc, [*plain, gpu], wait=3)
        item = fleet.submit(tc, queue="gpu")
        _until(lambda: isinstance(got.get(gpu), dict))
        assert got[gpu]["id"] == item
        # the others, whose turn found only an item they may not take, waited on
        _until(lambda: len(got) == 5)
        assert [got[w] for w in plain] == [204] * 4
