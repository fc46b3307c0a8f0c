"""``dreamlake provider watch``: keep every provider of a root where its target says.

Runs until stopped (SIGTERM or SIGINT end the pass in progress after the provider in
hand; ``once``: one pass, then return). Each pass derives every provider's status as
``status`` does and performs the next step toward ``target_status`` only where that
step is not gated for the provider (``reconcile``'s planner and gating set); a gated
step is reported once per change and never performed. A connected provider whose
daemon died is started again by ``connect``. After a failure a provider is left
alone for a growing, capped pause (``engine/watcher/backoff.py``).

Every ``drift_interval`` seconds (0: never) a pass first runs the drift check
(``dreamlake provider drift``) on every provider with infrastructure; when the last
one ran is kept in ``.dream/watch.json``, so a watcher run from cron with ``once``
checks drift on the same schedule. One watcher per root (``engine/watcher/lock.py``).
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..contract import commands
from ..contract.errors import DreamlakeError, UsageError
from ..lifecycle.actual import ShellFactory
from ..world.paths import Root, check_name
from ._common import root_for

DEFAULT_INTERVAL = 60.0
DEFAULT_DRIFT_INTERVAL = 15 * 60.0


def watch(
    *,
    names: list[str] | None = None,
    all_providers: bool = False,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    interval: float = DEFAULT_INTERVAL,
    drift_interval: float = DEFAULT_DRIFT_INTERVAL,
    once: bool = False,
    emit: Callable[[dict[str, Any]], None],
    stop: threading.Event | None = None,
    shell_factory: ShellFactory | None = None,
    handle_signals: bool = True,
) -> int:
    """Watch the root until ``stop`` is set (SIGTERM/SIGINT set it when
    ``handle_signals``); returns the exit code (0; 1 when the last pass could not
    read the root, which its ``error`` event says). Raises ``UsageError`` for bad
    flags and ``WatcherRunning`` when another watcher holds the root."""
    from ..watcher.lock import WatchLock
    from ..watcher.passes import Watcher

    names = _names(names, all_providers)
    if interval <= 0:
        raise UsageError(f"--interval must be more than 0 seconds; got {interval:g}")
    if drift_interval < 0:
        raise UsageError(f"--drift-interval must be 0 (never) or more; got {drift_interval:g}")
    root = root_for(dream_dir, cwd)
    stop = stop or threading.Event()
    lock = WatchLock(root.dream)
    holder = lock.acquire(commands.list_(dream_dir))
    try:
        with _signals(stop, handle_signals):
            w = Watcher(root, dream_dir, emit, names=names, stop=stop,
                        shell_factory=shell_factory, holder=holder.to_wire())  # fmt: skip
            emit({"event": "watching", "root": str(root.path), "providers": names or "all",
                  "interval": interval, "driftInterval": drift_interval, "once": once,
                  "holder": holder.to_wire(), "lock": str(lock.path),
                  "at": holder.since})  # fmt: skip
            code = 0
            while not stop.is_set():
                due = _drift_due(root, drift_interval)
                try:
                    w.run_pass(drift=due)
                except DreamlakeError as exc:  # the root cannot be read (a broken .dreamrc)
                    code = 1
                    emit(_error_event(exc, dream_dir))
                else:
                    code = 0
                    if due:
                        _drift_done(root)
                if once:
                    break
                stop.wait(interval)
            emit({"event": "stopped", "at": _now(), "once": once})
    finally:
        lock.release()
    return code


def _error_event(exc: DreamlakeError, dream_dir: str | None) -> dict[str, Any]:
    """A pass that could not look at the root: what went wrong and what fixes it."""
    nxt = exc.next_action
    bad = getattr(exc, "path", None)
    if nxt is None and bad is not None:
        action: dict[str, Any] = {"kind": "edit_then_continue", "file": str(bad),
                                  "command": commands.list_(dream_dir)}  # fmt: skip
    elif nxt is None:
        action = {"kind": "run", "command": commands.list_(dream_dir)}
    else:
        action = nxt.model_dump(by_alias=True, exclude_none=True)
    return {"event": "error", "error": exc.message, "kind": exc.kind, "nextAction": action,
            "at": _now()}  # fmt: skip


def _names(names: list[str] | None, all_providers: bool) -> list[str] | None:
    if names and all_providers:
        raise UsageError("name providers with -n, or watch them all with --all: not both")
    if not names and not all_providers:
        raise UsageError("say which providers to watch: -n NAME (repeatable) or --all")
    return [check_name(n) for n in dict.fromkeys(names)] if names else None


def _now() -> str:
    from ..watcher.lock import now_iso

    return now_iso()


@contextmanager
def _signals(stop: threading.Event, handle: bool) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop``: the pass in progress finishes the provider
    in hand, then the watcher lets go of the root and returns."""
    if not handle or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}

    def on_signal(_sig: int, _frame: object) -> None:
        stop.set()

    for s in old:
        signal.signal(s, on_signal)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _drift_due(root: Root, drift_interval: float) -> bool:
    if drift_interval <= 0:
        return False
    from ..watcher.passes import state_path

    try:
        data = json.loads(state_path(root).read_text(encoding="utf-8"))
        last = float(data.get("driftPassAt", 0)) if isinstance(data, dict) else 0.0
    except (OSError, ValueError, TypeError):
        last = 0.0
    return time.time() - last >= drift_interval


def _drift_done(root: Root) -> None:
    from ..settings.fsutil import atomic_write
    from ..watcher.passes import state_path

    atomic_write(state_path(root), json.dumps({"driftPassAt": time.time()}) + "\n")


__all__ = ["DEFAULT_DRIFT_INTERVAL", "DEFAULT_INTERVAL", "watch"]
