"""The server's collector policy (controlplane/server/fleet/gcpolicy.py): off leaves
Python's collector alone; on freezes at start and keeps freezing what survives;
stopping unfreezes."""

from __future__ import annotations

import asyncio
import gc

import pytest
from dreamlake.controlplane.server.fleet import gcpolicy
from dreamlake.controlplane.server.settings import Settings


def test_off_leaves_the_collector_alone() -> None:
    async def run() -> None:
        assert gcpolicy.start(0) is None
        assert gc.get_freeze_count() == 0

    asyncio.run(run())


def test_on_freezes_what_survives_and_unfreezes_at_stop() -> None:
    async def run() -> None:
        task = gcpolicy.start(0.05)
        try:
            assert task is not None and gc.get_freeze_count() > 0
            survivors = [[i] for i in range(5000)]  # made after the first freeze
            await asyncio.sleep(0.2)
            assert not any(o is survivors for o in gc.get_objects())  # out of reach now
            assert gc.get_freeze_count() > 5000
        finally:
            await gcpolicy.stop(task)
        assert gc.get_freeze_count() == 0

    asyncio.run(run())


def test_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().gc_freeze_seconds == 1.0
    monkeypatch.setenv("LAKESHORE_GC_FREEZE_SECONDS", "0")
    assert Settings.from_env().gc_freeze_seconds == 0.0
