"""The nymph ``process`` runner: exit codes, merged output tail, timeouts and stop
requests kill the whole process group."""

from __future__ import annotations

import threading
import time

from dreamlake.controlplane.nymph.daemon import Backoff
from dreamlake.controlplane.nymph.runner import ProcessRunner


def test_exit_code_and_output_tail() -> None:
    r = ProcessRunner().run("echo out; echo err >&2; exit 5")
    assert r.exit_code == 5 and r.error is None
    assert r.output_tail == "out\nerr\n"


def test_tail_keeps_the_end() -> None:
    r = ProcessRunner(tail_chars=100).run("seq 1 20000")
    assert r.exit_code == 0
    assert len(r.output_tail) <= 100 and r.output_tail.endswith("19999\n20000\n")


def test_stdin_is_closed_and_env_is_passed(tmp_path: object) -> None:
    r = ProcessRunner().run('cat; printf %s "$X"', env={"X": "value"})
    assert r.exit_code == 0 and r.output_tail == "value"


def test_timeout_kills_the_group() -> None:
    started = time.monotonic()
    r = ProcessRunner().run("sleep 30 & sleep 30; echo never", timeout=0.5)
    assert time.monotonic() - started < 10
    assert r.error is not None and "timed out" in r.error
    assert r.exit_code is not None and r.exit_code != 0
    assert "never" not in r.output_tail


def test_stop_request_kills_the_command() -> None:
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    started = time.monotonic()
    r = ProcessRunner().run("sleep 30", stop=stop)
    assert time.monotonic() - started < 10
    assert r.error is not None and "stopped" in r.error


def test_unstartable_workdir_is_an_error_not_a_crash(tmp_path: object) -> None:
    r = ProcessRunner(workdir="/nonexistent/dir").run("true")
    assert r.exit_code is None and r.error and "cannot start" in r.error


def test_backoff_is_capped_exponential_with_full_jitter() -> None:
    b = Backoff(base=0.5, cap=4.0)
    windows = []
    for _ in range(10):
        windows.append(b.window())
        assert 0.0 <= b.next_delay() <= windows[-1]
    assert windows[:4] == [0.5, 1.0, 2.0, 4.0] and set(windows[4:]) == {4.0}
    b.reset()
    assert b.window() == 0.5 and b.next_delay() <= 0.5


def test_full_jitter_spreads_a_fleet_over_the_window() -> None:
    """1,000 daemons that failed together (a server restart) do not retry together:
    their waits cover the whole window, none bunched in one tenth of it."""
    delays = []
    for _ in range(1000):
        b = Backoff(base=0.5, cap=8.0)
        for _ in range(4):
            b.next_delay()
        delays.append(b.next_delay())  # the fifth wait: U(0, 8)
    assert min(delays) < 0.5 and max(delays) > 7.5
    per_tenth = [sum(1 for d in delays if k * 0.8 <= d < (k + 1) * 0.8) for k in range(10)]
    assert max(per_tenth) < 200, per_tenth  # ~100 each; one second of them all is a herd


def test_a_lost_server_spreads_the_first_try_again_over_seconds() -> None:
    """5,000 daemons whose replica was killed under their held polls: the first wait
    of each is drawn over LOST_SPREAD (capped), not the half-second base window,
    then the backoff goes on as usual."""
    from dreamlake.controlplane.nymph.daemon import LOST_SPREAD

    delays = []
    for _ in range(5000):
        b = Backoff(base=0.5, cap=15.0)
        delays.append(b.next_delay(lost=True))
        assert b.failures == 1 and b.window() == 1.0
    assert max(delays) <= LOST_SPREAD and max(delays) > 0.9 * LOST_SPREAD
    per_second = [sum(1 for d in delays if k <= d < k + 1) for k in range(int(LOST_SPREAD))]
    assert max(per_second) < 700, per_second  # ~500 a second, not 5,000 in one
    capped = Backoff(base=0.5, cap=2.0)
    assert capped.next_delay(lost=True) <= 2.0  # a small --max-backoff still bounds it
    for _ in range(100):  # not the first failure: the usual window (1 s)
        assert Backoff(base=0.5, cap=15.0, failures=1).next_delay(lost=True) <= 1.0
