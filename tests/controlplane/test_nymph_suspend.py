"""Suspend semantics of a real ``nymph`` against a real lakeshore: on SIGUSR1 it takes
no new work, lets the running item finish, deregisters and exits 75 (a supervisor
does not restart it); a SIGTERM during the drain cuts the item short, reported
failed; ``--pid-file`` holds its pid while it runs."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from dreamlake.controlplane.client import Client
from dreamlake.controlplane.nymph.daemon import SUSPENDED_EXIT
from lakeshore_fixtures import NymphProc, ServerProc, wait_until

SHARES_SERVER = True  # its tests keep to namespaces of their own: the session's server

pytestmark = pytest.mark.slow


def _live(c: Client, provider: str) -> int:
    return int(c.claims(provider)["live"])


def test_suspend_drains_the_running_item_then_exits_75(
    server: ServerProc,
    fresh_namespace: tuple[str, Client],
    start_nymph: Callable[..., NymphProc],
    tmp_path: Path,
) -> None:
    ns, c = fresh_namespace
    assert c.token is not None
    pid_file = tmp_path / "nymph.pid"
    n = start_nymph(
        server.url, c.token, provider="pausy", namespace=ns, extra=["--pid-file", str(pid_file)]
    )
    assert wait_until(lambda: _live(c, "pausy") == 1, 30), n.log()
    assert n.proc is not None
    assert pid_file.read_text().strip() == str(n.proc.pid)

    started, finished = tmp_path / "started", tmp_path / "finished"
    item = c.submit_work("pausy", f"touch {started}; sleep 2; touch {finished}", queue="gpu")
    assert wait_until(started.exists, 30), n.log()
    n.proc.send_signal(signal.SIGUSR1)
    late = c.submit_work("pausy", f"touch {tmp_path / 'never'}", queue="gpu")
    assert n.proc.wait(timeout=30) == SUSPENDED_EXIT, n.log()
    assert finished.exists()  # the running item was allowed to finish
    done = c.get_work(item["id"])
    assert done["state"] == "succeeded", (done, n.log())
    assert _live(c, "pausy") == 0
    assert "suspended" in n.log() and "deregistered" in n.log()
    assert not (tmp_path / "never").exists()  # no new work was taken
    assert c.get_work(late["id"])["state"] in ("queued", "failed", "lost")
    assert not pid_file.exists()


def test_sigterm_during_the_drain_cuts_the_item_short(
    server: ServerProc,
    fresh_namespace: tuple[str, Client],
    start_nymph: Callable[..., NymphProc],
    tmp_path: Path,
) -> None:
    ns, c = fresh_namespace
    assert c.token is not None
    n = start_nymph(server.url, c.token, provider="stubborn", namespace=ns)
    assert wait_until(lambda: _live(c, "stubborn") == 1, 30), n.log()
    assert n.proc is not None
    started = tmp_path / "started"
    item = c.submit_work("stubborn", f"touch {started}; sleep 60", queue="gpu")
    assert wait_until(started.exists, 30), n.log()
    n.proc.send_signal(signal.SIGUSR1)
    time.sleep(0.5)
    assert n.alive()  # still draining: the item runs on
    assert _live(c, "stubborn") == 1  # and the worker stays live while it does
    t0 = time.monotonic()
    n.proc.send_signal(signal.SIGTERM)
    assert n.proc.wait(timeout=20) == SUSPENDED_EXIT, n.log()
    assert time.monotonic() - t0 < 10
    done = c.get_work(item["id"])
    assert done["state"] == "failed"
    assert done["error"] == "the daemon stopped before the command finished"
