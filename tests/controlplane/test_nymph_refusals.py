"""A daemon whose token the control plane keeps refusing (401) retries as before
but says so once, then at growing intervals with the count, each time naming
``dreamlake provider connect``; once the token is taken again it says that, and
a later refusal is said at once. The counting itself is held with a clock of its
own (``controlplane/nymph/refusals.py``); the loop runs against the session's
real server."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable

import pytest
from dreamlake.controlplane.client import Client
from dreamlake.controlplane.nymph.daemon import Daemon, DaemonConfig
from dreamlake.controlplane.nymph.refusals import FIRST_GAP, LONGEST_GAP, Repeats, refused_line
from lakeshore_fixtures import ServerProc

SHARES_SERVER = True  # registers one provider name of its own


@pytest.fixture(scope="module")
def lakeshore(shared_server_sqlite: ServerProc) -> ServerProc:
    return shared_server_sqlite


def test_said_once_then_at_growing_intervals() -> None:
    now = [0.0]
    repeats = Repeats(clock=lambda: now[0])
    said = []
    for _ in range(2000):  # a refusal every 3 s: 100 minutes of them
        count = repeats.seen()
        if count is not None:
            said.append((now[0], count))
        now[0] += 3.0
    times = [t for t, _ in said]
    assert times[:2] == [0.0, FIRST_GAP]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps == sorted(gaps) and max(gaps) <= LONGEST_GAP + 3.0
    assert len(said) <= 8 and said[-1][1] > 1000  # eight lines, not two thousand
    assert repeats.clear() == 2000 and repeats.seen() == 1  # over: said at once again
    assert "`dreamlake provider connect`" in refused_line(1, FIRST_GAP)
    line = refused_line(41, 2 * FIRST_GAP)
    assert "41 times in a row" in line and "after 2 min" in line
    assert "`dreamlake provider connect`" in line


def _until(check: Callable[[], bool], what: str, seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < end, what
        time.sleep(0.02)


def test_the_loop_says_a_refused_token_once_and_its_return(
    lakeshore: ServerProc, caplog: pytest.LogCaptureFixture
) -> None:
    token = ["not-a-token"]
    config = DaemonConfig(
        provider="refusals", queues=["q"], instance_id="i-refused", host="h",
        version="t", poll_wait=0.5, max_backoff=0.02,
    )  # fmt: skip
    daemon = Daemon(Client(lakeshore.url, token[0]), config, token_loader=lambda: token[0])
    caplog.set_level(logging.INFO, logger="nymph")
    loop = threading.Thread(target=daemon.poll_loop, daemon=True)
    loop.start()
    try:
        _until(lambda: daemon._refusals.count >= 30, "the daemon retries the refused token")
        refused = [r for r in caplog.records if "refused the token (401)" in r.getMessage()]
        assert len(refused) == 1, [r.getMessage() for r in refused]  # not one per retry
        assert "`dreamlake provider connect`" in refused[0].getMessage()
        assert refused[0].levelno == logging.WARNING
        token[0] = lakeshore.admin_token  # its token file rewritten: read at the next retry
        _until(lambda: daemon.worker_id is not None, "the daemon registers with the new token")
        # and polls with it: the long-poll's own client took it too (no refusal after)
        polled = daemon._alive_at
        _until(lambda: daemon._alive_at > polled, "the daemon polls with the new token")
        back = [
            r.getMessage() for r in caplog.records if "accepts the token again" in r.getMessage()
        ]
        assert len(back) == 1 and "refused" in back[0], back
        assert daemon._refusals.count == 0
    finally:
        daemon.stop.set()
        loop.join(timeout=30)
