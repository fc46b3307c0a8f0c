"""A watch on ``lakeshore serve``'s event loop, for the fleet benchmark
(``fleet_daemons.py --watch-stalls`` puts this folder on the server's PYTHONPATH).

A thread asks the loop to run a no-op every 10 ms. When the loop has not run it
within 30 ms, that is a stall: until the loop runs it, the thread samples every
5 ms what the loop's thread is doing (its Python stack, its system call and kernel
wait channel), what the other threads run, and, from the kernel's schedstat, how
long the loop's thread ran and how long it waited for a core during the stall (the
rest it slept: blocked on a lock, the GIL included). The figures are written to
``$STALLWATCH`` (a JSON file) every 5 s. Nothing here runs unless ``STALLWATCH`` is
set and the process is ``lakeshore serve``; it is not part of the product.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import threading
import time
import traceback
from typing import Any

IDLE = {"wait", "_wait_for_tstate_lock", "select", "poll", "acquire", "get", "_worker"}


def _sched(tid: int) -> tuple[float, float]:
    """(ms on a core, ms waiting for one) of thread ``tid`` so far."""
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            run, wait, _ = f.read().split()
        return int(run) / 1e6, int(wait) / 1e6
    except (OSError, ValueError):
        return 0.0, 0.0


def _where(tid: int) -> tuple[str, str]:
    """The thread's system call (or "running") and kernel wait channel."""
    try:
        with open(f"/proc/self/task/{tid}/syscall") as f:
            call = f.read().split()[0]
        with open(f"/proc/self/task/{tid}/wchan") as f:
            return call, f.read()
    except (OSError, IndexError):
        return "?", "?"


def _stack(frame: Any, depth: int) -> str:
    return " <- ".join(
        f"{os.path.basename(x.filename)}:{x.lineno}:{x.name}"
        for x in reversed(traceback.extract_stack(frame)[-depth:])
    )


def _watch(loop: Any, main_id: int, tid: int, out: str) -> None:
    stalls: list[dict[str, Any]] = []
    loop_stacks: collections.Counter[str] = collections.Counter()
    others: collections.Counter[str] = collections.Counter()
    calls: collections.Counter[str] = collections.Counter()
    ticks = 0
    last_dump = time.monotonic()
    me = threading.get_ident()
    while True:
        done = threading.Event()
        t0 = time.monotonic()
        ran0, waited0 = _sched(tid)
        try:
            loop.call_soon_threadsafe(done.set)
        except RuntimeError:  # the loop has closed
            return
        if done.wait(0.03):
            ticks += 1
        else:
            seen: collections.Counter[str] = collections.Counter()
            while not done.wait(0.005):
                frames = sys._current_frames()
                for ident, frame in frames.items():
                    if ident not in (main_id, me) and frame.f_code.co_name not in IDLE:
                        others[_stack(frame, 6)] += 1
                calls[" ".join(_where(tid))] += 1
                if main_id in frames:
                    seen[_stack(frames[main_id], 8)] += 1
                # a frame held keeps its locals alive, a half-read result among them,
                # and with it that result's SQLite snapshot on the pooled connection
                frames = frame = None  # type: ignore[assignment]
            ran1, waited1 = _sched(tid)
            stalls.append(
                {
                    "at": round(time.time(), 3),
                    "ms": round((time.monotonic() - t0) * 1000, 1),
                    "ran_ms": round(ran1 - ran0, 1),
                    "runq_wait_ms": round(waited1 - waited0, 1),
                    "loop_stack": seen.most_common(1)[0][0] if seen else "",
                }
            )
            loop_stacks.update(seen)
        if time.monotonic() - last_dump > 5:
            last_dump = time.monotonic()
            doc = {
                "ticks_on_time": ticks,
                "stalls": stalls,
                "loop_stacks": loop_stacks.most_common(20),
                "loop_thread_in": calls.most_common(10),
                "other_threads": others.most_common(20),
            }
            with open(out + ".tmp", "w") as f:
                json.dump(doc, f, indent=1)
            os.replace(out + ".tmp", out)
        time.sleep(0.01)


def _install(out: str) -> None:
    import uvicorn.server

    startup = uvicorn.server.Server.startup

    async def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        import asyncio

        ids = (threading.get_ident(), threading.get_native_id())
        loop = asyncio.get_running_loop()
        threading.Thread(target=_watch, args=(loop, *ids, out), daemon=True).start()
        return await startup(self, *args, **kwargs)

    uvicorn.server.Server.startup = watched  # type: ignore[method-assign]


if os.environ.get("STALLWATCH") and "serve" in sys.argv:
    _install(os.environ["STALLWATCH"])
