"""The client's HTTP/1.1 connection (controlplane/connection.py) against a real
lakeshore on 127.0.0.1: kept between requests, new per request without keep-alive,
replaced when the server closed it meanwhile, ended from another thread; a
Retry-After header read as seconds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from dreamlake.controlplane.client import Client, Unreachable
from dreamlake.controlplane.connection import Exchange, retry_after
from lakeshore_fixtures import ServerProc

SHARES_SERVER = True  # its tests keep to names of their own: the session's server


def _observed(url: str, token: str, keep_alive: bool) -> tuple[Client, list[Exchange]]:
    seen: list[Exchange] = []
    return Client(url, token, keep_alive=keep_alive, observer=seen.append), seen


def test_keep_alive_carries_every_request_on_one_connection(server: ServerProc) -> None:
    c, seen = _observed(server.url, server.admin_token, keep_alive=True)
    for _ in range(5):
        c.healthz()
        c.workers()
    assert [e.new_connection for e in seen] == [True] + [False] * 9
    assert c.connection.opened == 1 and c.connection.is_open
    c.close()
    assert not c.connection.is_open


def test_without_keep_alive_every_request_opens_and_closes_one(server: ServerProc) -> None:
    c, seen = _observed(server.url, server.admin_token, keep_alive=False)
    for _ in range(3):
        c.workers()
    assert [e.new_connection for e in seen] == [True] * 3
    assert c.connection.opened == 3 and not c.connection.is_open


def test_a_connection_the_server_closed_is_replaced_before_the_next_request(
    start_server: Callable[..., ServerProc],
) -> None:
    s = start_server(env={"LAKESHORE_KEEP_ALIVE_SECONDS": "1"})
    c, seen = _observed(s.url, s.admin_token, keep_alive=True)
    c.workers()
    time.sleep(2.0)  # the server's keep-alive timeout closes it
    assert c.workers() == []
    assert [e.new_connection for e in seen] == [True, True]
    assert all(e.status == 200 for e in seen)


def test_abort_ends_a_held_poll_from_another_thread(server: ServerProc) -> None:
    c = Client(server.url, server.admin_token, keep_alive=True)
    wid = c.register("aborted", "i-abort")["workerId"]
    poller = c.sibling()
    errors: list[BaseException] = []

    def poll() -> None:
        try:
            poller.poll_work(wid, wait=30)
        except Unreachable as exc:
            errors.append(exc)

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.5)
    started = time.monotonic()
    poller.abort()
    t.join(20)
    # ended by the abort, well before the poll's own 30 s (slack for a busy machine)
    assert not t.is_alive() and time.monotonic() - started < 10 and errors


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("3", 3.0),
        (" 0 ", 0.0),
        ("-4", 0.0),
        ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),
        ("soon", None),
        (None, None),
    ],
)
def test_retry_after_header(header: str | None, seconds: float | None) -> None:
    now = 1445412480.0  # 2015-10-21 07:28:00 UTC
    assert retry_after(header, now=now) == seconds


def test_without_keep_alive_requests_from_two_threads_run_side_by_side(
    server: ServerProc,
) -> None:
    """A held long-poll on one thread does not hold up a submit on another that
    shares the client (each request has its own connection), so it wakes at once."""
    c = Client(server.url, server.admin_token)
    wid = c.register("side-by-side", "i-1")["workerId"]
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(c.poll_work(wid, wait=40)))
    t.start()
    time.sleep(0.5)
    started = time.monotonic()
    item = c.submit_work("side-by-side", "true")
    t.join(60)
    # woken by the submit, well before the poll's own 40 s (slack for a busy machine)
    assert time.monotonic() - started < 15
    assert got and isinstance(got[0], dict) and got[0]["id"] == item["id"]
