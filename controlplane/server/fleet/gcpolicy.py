"""How the server keeps Python's cycle collector from pausing a fleet.

A server holding 10,000 daemons keeps about a million container objects alive: each
held long-poll is a request cycle, a scope, headers, a task and a stack of coroutine
frames (about 90 objects), and all of them are replaced every 20 s as the polls
renew. Python's oldest-generation collection walks every one of them, on the event
loop: measured at 10,000 daemons, 250–980 ms per pass, several a minute, and every
pass found nothing to free (the server makes no cyclic garbage in its steady
state: requests and connections are freed by reference counts). Each pass stalled
every heartbeat behind it.

So, with ``gc_freeze_seconds`` > 0 (``LAKESHORE_GC_FREEZE_SECONDS``, default 1):
once the server is up it collects once and moves everything alive into Python's
permanent generation (``gc.freeze()``, which is constant-time), and does the same
every ``gc_freeze_seconds``, so a collection walks at most that long's survivors
(milliseconds). Reference counting frees frozen objects as usual; a reference cycle
that dies after being frozen waits for the hourly full pass (:data:`FULL_PASS_SECONDS`:
everything is unfrozen once, so Python's next oldest-generation collection sees it).
``0`` keeps Python's default collector.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging

log = logging.getLogger("lakeshore.gc")


FULL_PASS_SECONDS = 3600.0


async def _freezing(every: float) -> None:
    loop = asyncio.get_running_loop()
    full_at = loop.time() + FULL_PASS_SECONDS
    while True:
        await asyncio.sleep(every)
        if loop.time() >= full_at:
            gc.unfreeze()  # one full pass an hour: cycles that died frozen are freed
            full_at = loop.time() + FULL_PASS_SECONDS
            continue
        gc.freeze()


def start(every: float) -> asyncio.Task[None] | None:
    """Collect once, freeze, and keep freezing every ``every`` seconds (0: off)."""
    if every <= 0:
        return None
    gc.collect()
    gc.freeze()
    log.debug("froze %d objects; freezing every %gs", gc.get_freeze_count(), every)
    return asyncio.get_running_loop().create_task(_freezing(every))


async def stop(task: asyncio.Task[None] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    unfreeze()


def unfreeze() -> None:
    gc.unfreeze()
