"""The event held long-polls wait on (controlplane/server/fleet/wakeup.py): it
behaves as ``asyncio.Event`` does where the server uses one, and a waiter that
stops waiting leaves without scanning the others."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dreamlake.controlplane.server.fleet.notify import Notifier
from dreamlake.controlplane.server.fleet.wakeup import Wakeup


def test_set_wakes_every_waiter_and_later_waits_return_at_once() -> None:
    async def run() -> None:
        ev = Wakeup()
        waiters = [asyncio.ensure_future(ev.wait()) for _ in range(50)]
        await asyncio.sleep(0)
        assert ev.waiting() == 50 and not ev.is_set()
        ev.set()
        assert await asyncio.gather(*waiters) == [True] * 50
        assert ev.is_set() and ev.waiting() == 0
        assert await asyncio.wait_for(ev.wait(), 1) is True
        ev.set()  # twice is harmless

    asyncio.run(run())


def test_a_cancelled_or_timed_out_waiter_leaves_and_the_rest_still_wake() -> None:
    async def run() -> None:
        ev = Wakeup()
        stay = asyncio.ensure_future(ev.wait())
        leave = asyncio.ensure_future(ev.wait())
        await asyncio.sleep(0)
        leave.cancel()
        await asyncio.sleep(0)
        assert leave.cancelled() and ev.waiting() == 1
        assert await Notifier.wait(ev, 0.01) is False  # timed out: gone from the set too
        assert ev.waiting() == 1
        ev.set()
        assert await stay is True

    asyncio.run(run())


def test_ten_thousand_waiters_leave_one_by_one() -> None:
    """The reason for the class: 10,000 held polls, each ending on its own (what it
    costs is in benchmarks/README.md, not asserted here)."""

    async def run() -> None:
        ev = Wakeup()
        waiters = [asyncio.ensure_future(ev.wait()) for _ in range(10_000)]
        await asyncio.sleep(0)
        assert ev.waiting() == 10_000
        for k, w in enumerate(waiters):
            w.cancel()
            if k % 2500 == 0:
                await asyncio.sleep(0)
        await asyncio.gather(*waiters, return_exceptions=True)
        assert ev.waiting() == 0
        ev.set()  # nobody left to wake

    asyncio.run(run())


def test_the_server_waits_for_shutdown_on_a_wakeup(tmp_path: Path) -> None:
    from dreamlake.controlplane.server.app import create_app
    from dreamlake.controlplane.server.settings import Settings

    app = create_app(Settings(data_dir=tmp_path / "data"))
    assert isinstance(app.state.draining, Wakeup)


def test_the_notifier_hands_out_wakeups() -> None:
    async def run() -> None:
        n = Notifier()
        ev = n.event("work:1:p")
        assert isinstance(ev, Wakeup)
        waiter = asyncio.ensure_future(Notifier.wait(ev, 5))
        await asyncio.sleep(0)
        n.fire("work:1:p")
        assert await waiter is True
        assert n.event("work:1:p") is not ev  # a fire is once: the next waits afresh

    asyncio.run(run())


def test_a_wait_ends_when_the_server_starts_shutting_down() -> None:
    """``Notifier.wait(..., until=draining)``: the shutdown ends it at once (False:
    the event did not fire), and a wait begun after it returns at once."""

    async def run() -> None:
        event, draining = Wakeup(), Wakeup()
        waiter = asyncio.ensure_future(Notifier.wait(event, 30, until=draining))
        await asyncio.sleep(0)
        draining.set()
        assert await asyncio.wait_for(waiter, 1) is False
        assert await asyncio.wait_for(Notifier.wait(event, 30, until=draining), 1) is False
        assert event.waiting() == 0 and draining.waiting() == 0

    asyncio.run(run())


def test_a_wait_ends_when_its_client_goes_and_leaves_nothing_behind() -> None:
    """``gone=``: the client's disconnect ends the wait (False), and the one future
    it waited on is gone from every event and callback when it returns."""

    async def run() -> None:
        loop = asyncio.get_running_loop()
        event, draining = Wakeup(), Wakeup()
        gone: asyncio.Future[None] = loop.create_future()
        waiter = asyncio.ensure_future(Notifier.wait(event, 30, until=draining, gone=gone))
        await asyncio.sleep(0)
        assert event.waiting() == 1 and draining.waiting() == 1
        gone.set_result(None)
        assert await asyncio.wait_for(waiter, 1) is False
        assert event.waiting() == 0 and draining.waiting() == 0
        assert await Notifier.wait(event, 30, gone=gone) is False  # gone already: at once

    asyncio.run(run())


def test_a_cancelled_wait_leaves_nothing_behind() -> None:
    async def run() -> None:
        event, draining = Wakeup(), Wakeup()
        waiter = asyncio.ensure_future(Notifier.wait(event, 30, until=draining))
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        assert event.waiting() == 0 and draining.waiting() == 0
        event.set()  # after the wait: nothing to wake, nothing raised

    asyncio.run(run())
