"""The churn benchmark's replayed fleet (benchmarks/churn_replay.py) puts on the wire
what a daemon with ``Client(keep_alive=False)`` puts there: the same bytes for every
kind of request, one request per connection, from the daemon's source address.

Both are run against one recording server on 127.0.0.1 that answers as lakeshore
would (a worker id, an item once, then 204s) and closes each connection after its
answer, as the server does for ``Connection: close``."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from churn_replay import ReplayDaemon, request_bytes, run_fleet

WORKER = "0f0e0d0c-0b0a-4908-8706-050403020100"
SOURCE = "127.0.0.3"
TOKEN = "lks_recorded"


def _kind(head: bytes) -> str:
    line = head.split(b"\r\n", 1)[0].decode()
    method, path = line.split()[:2]
    if path.endswith("/heartbeat"):
        return "heartbeat"
    if path.endswith("/result"):
        return "result"
    if "/work" in path and method == "GET":
        return "poll"
    return "register" if path.endswith("/workers") else "other"


class Recorder:
    """Records each connection: its peer address and every request read on it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections: list[tuple[str, list[bytes]]] = []
        self.item_given = False
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn, peer[0]), daemon=True).start()

    def _read(self, conn: socket.socket, buf: bytes) -> tuple[bytes | None, bytes]:
        while b"\r\n\r\n" not in buf:
            data = conn.recv(65536)
            if not data:
                return None, buf
            buf += data
        head, _, rest = buf.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            rest += conn.recv(65536)
        return head + b"\r\n\r\n" + rest[:length], rest[length:]

    def _answer(self, kind: str) -> bytes:
        status, body = "200 OK", b"{}"
        if kind == "register":
            body = json.dumps({"workerId": WORKER, "heartbeatSeconds": 10}).encode()
        elif kind == "poll":
            with self._lock:
                given, self.item_given = self.item_given, True
            if given:
                return b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n"
            body = json.dumps({"id": "w1", "command": "sleep 0"}).encode()
        head = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        head += f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        return head.encode() + body

    def _one(self, conn: socket.socket, peer: str) -> None:
        requests: list[bytes] = []
        with self._lock:
            self.connections.append((peer, requests))
        buf = b""
        with conn:
            while True:
                request, buf = self._read(conn, buf)
                if request is None:
                    return
                requests.append(request)
                conn.sendall(self._answer(_kind(request)))
                if b"connection: close" in request.lower():
                    return

    def by_kind(self) -> dict[str, list[bytes]]:
        out: dict[str, list[bytes]] = {}
        with self._lock:
            for _peer, requests in self.connections:
                for r in requests:
                    out.setdefault(_kind(r), []).append(r)
        return out

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    r = Recorder()
    yield r
    r.close()


def _daemon_calls(url: str) -> dict[str, bytes]:
    """What the daemon's own client sends, over real sockets."""
    recorder_calls: dict[str, Any] = {
        "register": lambda c: c.register("p7", "d7", host="host-7", queues=[], version="bench"),
        "heartbeat": lambda c: c.heartbeat(WORKER),
        "poll": lambda c: c.poll_work(WORKER, wait=20.0),
        "result": lambda c: c.report(WORKER, "w1", exit_code=0, output_tail="", error=None),
    }
    return {
        kind: request_bytes(url, TOKEN, call)  # the tap, compared below with the wire
        for kind, call in recorder_calls.items()
    }


def test_the_tap_writes_what_the_client_sends_on_a_socket(recorder: Recorder) -> None:
    client = Client(recorder.url, TOKEN, keep_alive=False, source_address=SOURCE)
    client.register("p7", "d7", host="host-7", queues=[], version="bench")
    client.heartbeat(WORKER)
    client.poll_work(WORKER, wait=20.0)
    client.report(WORKER, "w1", exit_code=0, output_tail="", error=None)
    wire = recorder.by_kind()
    tapped = _daemon_calls(recorder.url)
    for kind in ("register", "heartbeat", "poll", "result"):
        assert wire[kind] == [tapped[kind]], kind
    # the daemon's own pattern: a connection per request, from its source address
    assert [(peer, len(reqs)) for peer, reqs in recorder.connections] == [(SOURCE, 1)] * 4


def test_a_replayed_daemon_sends_the_daemon_s_bytes_one_request_per_connection(
    recorder: Recorder,
) -> None:
    records: list[tuple[Any, ...]] = []
    runs: dict[str, int] = {}
    daemon = ReplayDaemon(
        recorder.url,
        TOKEN,
        provider="p7",
        instance_id="d7",
        host_name="host-7",
        version="bench",
        source=SOURCE,
        poll_wait=20.0,
        heartbeat=0.3,
        record=lambda *r: records.append(r),
        runs=runs,
    )
    ends = time.time() + 2.5
    lags: list[tuple[float, float]] = []
    asyncio.run(
        run_fleet(
            [daemon],
            start_at=time.time(),
            spacing=0.0,
            heartbeat=0.3,
            ended=lambda: time.time() >= ends,
            lags=lags,
        )
    )
    assert len(lags) >= 20 and all(late >= 0 for _, late in lags)  # the loop's lateness
    time.sleep(0.3)  # the recorder reads what was sent last
    sent = recorder.by_kind()
    expected = _daemon_calls(recorder.url)
    assert sent["register"] == [expected["register"]]
    assert sent["result"] == [expected["result"]]
    assert len(sent["heartbeat"]) >= 4
    assert set(sent["heartbeat"]) == {expected["heartbeat"]}
    assert len(sent["poll"]) >= 2  # the item, then 204s paced a second apart
    assert set(sent["poll"]) == {expected["poll"]}
    assert "other" not in sent
    assert runs == {"w1": 1}
    # one request per connection, from the daemon's address (the end of the run may
    # cut the last one between its connection and its request)
    assert all(peer == SOURCE for peer, _ in recorder.connections)
    assert sorted(len(reqs) for _, reqs in recorder.connections)[1:] == [1] * (
        len(recorder.connections) - 1
    )
    assert daemon.opened == len(records)
    assert abs(len(recorder.connections) - daemon.opened) <= 1
    answered = [r for r in records if r[2]]
    assert len(answered) >= len(records) - 1
    assert all(r[2] in (200, 204) and r[4] is True for r in answered)
