"""How a real ``nymph`` connects to a real lakeshore on 127.0.0.1: an idle daemon
holds one keep-alive connection (its long-poll) and stays live on it alone; a busy
one adds one for heartbeats and its result and closes it again; after a server
restart it reconnects; a server over its budget answers 503 with Retry-After and
the daemon waits at least that long.

The module's server has a live bound of 4 s (twice the other modules'): the idle
and busy tests assert the worker live at every sample, and a bound that leaves
a few seconds for a busy machine's scheduling keeps them about the mechanism."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from dreamlake.controlplane.connection import Exchange
from dreamlake.controlplane.nymph.daemon import Daemon, DaemonConfig
from lakeshore_fixtures import NymphProc, ServerProc, tcp_table, wait_until

pytestmark = pytest.mark.slow

SERVER_LIVE_SECONDS = 4.0  # the live bound of conftest's module server
POLL_WAIT = 5.0  # longer than the live bound: only the held poll keeps an idle worker live


@pytest.fixture
def server(server: ServerProc) -> ServerProc:
    """The module's server (conftest's, with this module's live bound), started again
    (same data, same port) where a test before stopped it: the restart and shutdown
    tests stop this one rather than start their own."""
    if server.proc is None or server.proc.poll() is not None:
        server.start()
    return server


def connections_to(pid: int, port: int) -> list[int]:
    """Local ports of ``pid``'s ESTABLISHED TCP connections to 127.0.0.1:``port``."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().as_posix()
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    local_ports = []
    for f in tcp_table():
        local, remote, state, inode = f[1], f[2], f[3], f[9]
        if inode in inodes and state == "01" and int(remote.rsplit(":", 1)[1], 16) == port:
            local_ports.append(int(local.rsplit(":", 1)[1], 16))
    return sorted(local_ports)


def live(c: Client, provider: str) -> int:
    return int(c.claims(provider)["live"])


def test_an_idle_daemon_holds_one_connection_and_stays_live_on_it(
    server: ServerProc,
    fresh_namespace: tuple[str, Client],
    start_nymph: Callable[..., NymphProc],
) -> None:
    """Live bound 4 s, heartbeat interval 1.33 s, long-poll 5 s: only the held poll
    can keep it live, and the poll's one connection is kept across polls."""
    ns, c = fresh_namespace
    assert c.token is not None
    n = start_nymph(
        server.url, c.token, provider="idle", namespace=ns, extra=["--poll-wait", f"{POLL_WAIT:g}"]
    )
    assert n.proc is not None
    pid = n.proc.pid
    assert wait_until(lambda: live(c, "idle") == 1, 30), n.log()
    assert wait_until(lambda: len(connections_to(pid, server.port)) == 1, 10), n.log()
    first = connections_to(pid, server.port)
    end = time.monotonic() + 3 * POLL_WAIT + 1  # three polls or more, each renewed in turn
    while time.monotonic() < end:
        assert live(c, "idle") == 1, n.log()
        assert connections_to(pid, server.port) == first, "a new connection"
        time.sleep(0.3)
    workers = c.workers("idle")
    assert [w["state"] for w in workers] == ["active"]


def test_a_busy_daemon_heartbeats_and_closes_that_connection_after(
    server: ServerProc,
    fresh_namespace: tuple[str, Client],
    start_nymph: Callable[..., NymphProc],
) -> None:
    """A command running three live bounds long: no held poll, so heartbeats keep
    the worker live and the item running (not lost); then back to one connection."""
    ns, c = fresh_namespace
    assert c.token is not None
    n = start_nymph(server.url, c.token, provider="busy", namespace=ns)
    assert n.proc is not None
    pid = n.proc.pid
    assert wait_until(lambda: live(c, "busy") == 1, 30), n.log()
    item = c.submit_work("busy", f"sleep {3 * SERVER_LIVE_SECONDS:g}")
    assert wait_until(lambda: c.get_work(item["id"])["state"] == "running", 10)
    seen_two = False
    end = time.monotonic() + 3 * SERVER_LIVE_SECONDS - 0.5
    while time.monotonic() < end:
        assert c.get_work(item["id"])["state"] == "running", n.log()
        assert live(c, "busy") == 1, n.log()
        seen_two = seen_two or len(connections_to(pid, server.port)) == 2
        time.sleep(0.2)
    assert seen_two, "the heartbeats had no connection of their own"
    assert c.get_work(item["id"], wait=10)["state"] == "succeeded", n.log()
    assert wait_until(lambda: len(connections_to(pid, server.port)) == 1, 10)


def test_after_a_server_restart_it_reconnects_and_is_live(
    server: ServerProc, start_nymph: Callable[..., NymphProc]
) -> None:
    """The module's server is stopped and started again on its port and data."""
    n = start_nymph(server.url, server.admin_token, provider="again")
    assert n.proc is not None
    pid = n.proc.pid
    assert wait_until(lambda: live(server.admin, "again") == 1, 30), n.log()
    # registered on the heartbeat connection, which it closes before its first poll
    assert wait_until(lambda: len(connections_to(pid, server.port)) == 1, 10), n.log()
    before = connections_to(pid, server.port)
    assert len(before) == 1
    server.stop()
    server.start()
    c = server.admin
    assert wait_until(lambda: len(connections_to(pid, server.port)) == 1, 30), n.log()
    assert connections_to(pid, server.port) != before
    assert wait_until(lambda: live(c, "again") == 1, 30), n.log()
    done = c.get_work(c.submit_work("again", "exit 0")["id"], wait=30)
    assert done["state"] == "succeeded", n.log()
    assert len(c.workers("again")) == 1  # the same worker, not a second registration
    assert n.terminate() == 0


def test_a_server_over_its_budget_answers_503_and_the_daemon_waits_retry_after(
    start_server: Callable[..., ServerProc],
) -> None:
    s = start_server(env={"LAKESHORE_MAX_CONNECTIONS": "2", "LAKESHORE_RETRY_AFTER_SECONDS": "2"})
    hogs = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(2)]  # the budget
    try:
        time.sleep(0.3)
        with pytest.raises(ApiFailure) as refused:
            s.admin.workers()
        assert refused.value.status == 503 and refused.value.error == "overloaded"
        assert refused.value.retry_after == 2.0
        assert "shedding load" in str(refused.value.detail)

        exchanges: list[tuple[float, Exchange]] = []
        client = Client(s.url, s.admin_token, keep_alive=True)
        client.observer = lambda e: exchanges.append((time.monotonic(), e))
        config = DaemonConfig("shed", ["q"], "i-shed", "h", "t", poll_wait=1.0, max_backoff=0.5)
        daemon = Daemon(client, config)
        threads = daemon.start()
        try:
            assert wait_until(lambda: len(exchanges) >= 2, 15)
            (t0, e0), (t1, _e1) = exchanges[0], exchanges[1]
            assert e0.status == 503
            assert t1 - t0 >= 2.0  # waited what Retry-After asked
            for hog in hogs:
                hog.close()
            assert wait_until(lambda: daemon.worker_id is not None, 15)
            assert wait_until(lambda: live(s.admin, "shed") == 1, 15)
        finally:
            daemon.shutdown(threads)
    finally:
        for hog in hogs:
            hog.close()
    assert s.admin.healthz()  # /healthz is never shed


def test_the_daemon_moves_to_the_next_server_when_one_is_down(
    server: ServerProc, tmp_path: Path
) -> None:
    down = socket.socket()
    down.bind(("127.0.0.1", 0))
    dead_url = f"http://127.0.0.1:{down.getsockname()[1]}"  # bound, never listening
    try:
        client = Client(dead_url, server.admin_token, keep_alive=True)
        config = DaemonConfig(
            "mover", ["q"], "i-move", "h", "t", poll_wait=1.0, max_backoff=0.5,
            servers=[server.url],
        )  # fmt: skip
        daemon = Daemon(client, config)
        threads = daemon.start()
        try:
            assert wait_until(lambda: live(server.admin, "mover") == 1, 20)
            assert daemon.client.url == server.url and daemon.poller.url == server.url
        finally:
            daemon.shutdown(threads)
    finally:
        down.close()


def test_shutdown_ends_a_held_poll_at_once(server: ServerProc) -> None:
    client = Client(server.url, server.admin_token, keep_alive=True)
    daemon = Daemon(client, DaemonConfig("quick", ["q"], "i-q", "h", "t", poll_wait=30.0))
    threads = daemon.start()
    assert wait_until(lambda: live(server.admin, "quick") == 1, 20)
    time.sleep(0.5)  # the poll is held
    started = time.monotonic()
    daemon.shutdown(threads)
    threads[1].join(5)
    assert not threads[1].is_alive() and time.monotonic() - started < 6
    assert threading.active_count() >= 1


def test_a_server_shutting_down_answers_held_polls_503_with_retry_after(
    server: ServerProc,
) -> None:
    """Held polls are answered, not cut off at the end of the grace period (which
    their daemons saw as a 500): a 503 whose Retry-After spreads their return.
    (The module's server is the one stopped: the last test of the module.)"""
    from dreamlake.controlplane.server.fleet.shedding import RETRY_RESTART

    s = server
    admin = s.admin
    first = admin.register("draining", "i-route")["workerId"]  # its first poll: the route
    second = admin.register("draining", "i-hot")["workerId"]
    assert Client(s.url, s.admin_token).poll_work(second, wait=0.5) is None  # now known empty
    answers: dict[str, BaseException | None] = {}

    def hold(worker_id: str) -> None:
        try:
            Client(s.url, s.admin_token, keep_alive=True).poll_work(worker_id, wait=30)
            answers[worker_id] = None
        except Exception as exc:
            answers[worker_id] = exc

    threads = [threading.Thread(target=hold, args=(w,)) for w in (first, second)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    started = time.monotonic()
    s.stop()
    for t in threads:
        t.join(10)
    assert time.monotonic() - started < 8
    for worker_id in (first, second):
        exc = answers[worker_id]
        assert isinstance(exc, ApiFailure) and exc.status == 503, exc
        assert exc.error == "unavailable"
        assert exc.retry_after is not None
        assert RETRY_RESTART[0] <= exc.retry_after <= RETRY_RESTART[1]
    assert "Exception in ASGI application" not in s.log_tail()
