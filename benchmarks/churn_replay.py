"""The churn model's fleet, replayed from a few asyncio processes: the requests of
daemons that open a new connection for every request (``Client(keep_alive=False)``),
byte for byte, without a thread per daemon.

Why: the churn model run through the daemons themselves (``--churn-load daemons``)
puts 10,000 daemons' threads in 20 load processes on the same two cores as the
server. Measured that way the load processes used 0.6–1.1 of a core, the server's
loop waited for a core 0.3–0.45 s of every second it ran, and a daemon's heartbeat
measured the machine's contention more than the server. A real fleet runs on its
own hosts.

What is the same as the daemon, by construction and by test
(``tests/benchmarks/test_churn_replay.py``):

* **the bytes**: each request is written by the daemon's own ``Client`` with
  ``keep_alive=False`` (its ``Connection`` and ``http.client``) into a tap instead
  of a socket, once per daemon and kind (a result: once per item), and those bytes
  are sent; the test compares them with what the same ``Client`` sends over a real
  socket;
* **the connection pattern**: one TCP connection per request, opened from the
  daemon's own loopback source address, the request written at once, the answer
  read until the server closes (``Connection: close``);
* **the behaviour** of a daemon of that kind: register (again after a 404), hold
  a long-poll of ``poll_wait`` seconds and poll again as soon as it ends (at most
  once per ``MIN_POLL_INTERVAL``), run a claimed item (``sleep S``: wait S
  seconds) and report its result, a heartbeat every ``heartbeat`` seconds busy or
  idle (the heartbeat loop of daemons before keep-alive), and after a failure wait
  as the daemon does (``Retry-After`` and full jitter, capped).

What is not the same: nothing of the daemon's own process (its threads, its log).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import random
import time
import urllib.parse
from typing import Any

from dreamlake.controlplane.client import Client
from dreamlake.controlplane.connection import retry_after
from dreamlake.controlplane.nymph.daemon import MIN_POLL_INTERVAL, Backoff

_NO_CONTENT = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class _Tap:
    """Stands in for the socket of one ``http.client`` connection: keeps what is
    written to it and reads back an empty 204."""

    def __init__(self) -> None:
        self.sent = bytearray()

    def sendall(self, data: bytes) -> None:
        self.sent += data

    def makefile(self, *_args: Any, **_kwargs: Any) -> io.BytesIO:
        return io.BytesIO(_NO_CONTENT)

    def settimeout(self, _timeout: float | None) -> None:
        pass

    def close(self) -> None:
        pass


def tapped(client: Client) -> list[bytes]:
    """Makes ``client`` write every request into a tap: the list it returns gets
    each request's bytes, exactly as its connection would have sent them."""
    import http.client

    sent: list[bytes] = []
    connection = client.connection

    def open_tapped(timeout: float) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection(connection.host, connection.port, timeout=timeout)
        tap = _Tap()
        conn.sock = tap  # type: ignore[assignment]
        original_close = conn.close

        def close() -> None:
            if tap.sent:
                sent.append(bytes(tap.sent))
                tap.sent.clear()
            original_close()

        conn.close = close  # type: ignore[method-assign]
        return conn

    connection._open = open_tapped  # type: ignore[method-assign]
    return sent


def request_bytes(url: str, token: str, call: Any) -> bytes:
    """The bytes ``call(client)`` sends, ``client`` being ``Client(url, token,
    keep_alive=False)`` as a churn daemon has it."""
    client = Client(url, token, keep_alive=False)
    sent = tapped(client)
    call(client)
    if len(sent) != 1:
        raise AssertionError(f"expected one request, the client wrote {len(sent)}")
    return sent[0]


# -- one request on a connection of its own ------------------------------------------


class _Exchange(asyncio.Protocol):
    def __init__(self, raw: bytes, done: asyncio.Future[bytes], opened: list[float]) -> None:
        self.raw, self.done, self.opened = raw, done, opened
        self.chunks: list[bytes] = []

    def connection_made(self, transport: Any) -> None:
        self.opened.append(time.perf_counter())
        transport.write(self.raw)

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(b"".join(self.chunks))


class Answer:
    def __init__(self, raw: bytes) -> None:
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        self.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        self.headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()

    def server_ms(self) -> float:
        timing = self.headers.get("server-timing", "")
        if "dur=" in timing:
            return float(timing.split("dur=", 1)[1].split(";")[0])
        return float("nan")


async def exchange(
    host: str, port: int, source: str | None, raw: bytes, timeout: float, opened: list[float]
) -> tuple[Answer, float, float]:
    """Send ``raw`` on a new connection and read the answer until the server closes
    it: (answer, seconds in all, seconds opening the connection). ``opened`` gets
    the moment the connection was made, if it was."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[bytes] = loop.create_future()
    started = time.perf_counter()
    local = (source, 0) if source else None
    transport, _ = await asyncio.wait_for(
        loop.create_connection(lambda: _Exchange(raw, done, opened), host, port, local_addr=local),
        timeout,
    )
    try:
        data = await asyncio.wait_for(done, timeout)
    finally:
        transport.close()
    answer = Answer(data)
    if answer.status == 0:
        raise ConnectionError("the connection closed without an answer")
    connect = (opened[0] - started) if opened else 0.0
    return answer, time.perf_counter() - started, connect


# -- a daemon of the churn model ---------------------------------------------------


class ReplayDaemon:
    """One daemon's requests and their timing; see the module's docstring."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        provider: str,
        instance_id: str,
        host_name: str,
        version: str,
        source: str | None,
        poll_wait: float,
        heartbeat: float,
        record: Any,
        runs: dict[str, int],
        timeout: float = 10.0,
    ) -> None:
        self.url, self.token = url, token
        self.source = source
        self.poll_wait, self.heartbeat = poll_wait, heartbeat
        self.record, self.runs, self.timeout = record, runs, timeout
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.register_raw = request_bytes(
            url,
            token,
            lambda c: c.register(provider, instance_id, host=host_name, queues=[], version=version),
        )
        self.worker_id: str | None = None
        self.heartbeat_raw = b""
        self.poll_raw = b""
        self.opened = 0
        self._registering: asyncio.Future[str] | None = None

    async def _send(self, kind: str, raw: bytes, timeout: float) -> Answer:
        """One request on a connection of its own, recorded as the daemon's client
        records it (a connection counts as new once it was made)."""
        opened: list[float] = []
        try:
            answer, seconds, connect = await exchange(
                self.host, self.port, self.source, raw, timeout, opened
            )
        except BaseException as exc:  # cut by the end of the run too, as the client records
            self.opened += bool(opened)
            what = f"{kind} {type(exc).__name__}"
            self.record(time.time(), what, 0, 0.0, bool(opened), float("nan"), 0.0)
            raise
        self.opened += 1
        self.record(time.time(), kind, answer.status, seconds, True, answer.server_ms(), connect)
        return answer

    async def registered(self, stop: asyncio.Event) -> str:
        """The worker id, registering (again) when there is none."""
        if self.worker_id is not None:
            return self.worker_id
        if self._registering is None:
            self._registering = asyncio.ensure_future(self._register(stop))
        try:
            return await asyncio.shield(self._registering)
        finally:
            if self._registering is not None and self._registering.done():
                self._registering = None

    async def _register(self, stop: asyncio.Event) -> str:
        backoff = Backoff()
        while not stop.is_set():
            try:
                answer = await self._send("register", self.register_raw, self.timeout)
                if 200 <= answer.status < 300:
                    worker_id = str(json.loads(answer.body)["workerId"])
                    self._learn(worker_id)
                    return worker_id
                delay = self._after(answer, backoff)
            except (TimeoutError, OSError, ConnectionError, ValueError, KeyError):
                delay = self._after(None, backoff)
            await _sleep(stop, delay)
        raise asyncio.CancelledError

    def _learn(self, worker_id: str) -> None:
        """The worker's heartbeat and poll, as its client writes them."""
        self.heartbeat_raw = request_bytes(self.url, self.token, lambda c: c.heartbeat(worker_id))
        self.poll_raw = request_bytes(
            self.url, self.token, lambda c: c.poll_work(worker_id, wait=self.poll_wait)
        )
        self.worker_id = worker_id

    @staticmethod
    def _after(answer: Answer | None, backoff: Backoff) -> float:
        """How long the daemon waits after a failed call: its own ``Backoff``, on top
        of what a 429 or 503 asks in ``Retry-After``."""
        jitter = backoff.next_delay()
        if answer is not None and answer.status in (429, 503):
            asked = retry_after(answer.headers.get("retry-after"))
            if asked is not None:
                return asked + jitter
        return jitter

    def _refused(self, answer: Answer, backoff: Backoff) -> float:
        """The wait after an answer that is not a success. A 404 means the server
        forgot the worker: register again at once."""
        if answer.status == 404 and self.worker_id is not None:
            self.worker_id = None
            return 0.0
        return self._after(answer, backoff)

    async def beats(self, stop: asyncio.Event, first_in: float) -> None:
        """A heartbeat every ``heartbeat`` seconds, busy or idle."""
        await _sleep(stop, first_in)
        backoff = Backoff()
        while not stop.is_set():
            try:
                await self.registered(stop)
                answer = await self._send("heartbeat", self.heartbeat_raw, self.timeout)
                if 200 <= answer.status < 300:
                    backoff.reset()
                    delay = self.heartbeat
                else:
                    delay = self._refused(answer, backoff)
            except asyncio.CancelledError:
                return
            except (TimeoutError, OSError, ConnectionError):
                delay = self._after(None, backoff)
            await _sleep(stop, delay)

    async def polls(self, stop: asyncio.Event) -> None:
        """Long-poll back to back; run what comes and report it."""
        backoff = Backoff()
        while not stop.is_set():
            try:
                await self.registered(stop)
                asked = time.monotonic()
                answer = await self._send("poll", self.poll_raw, self.poll_wait + self.timeout)
                if answer.status == 200:
                    backoff.reset()
                    await self._run(stop, json.loads(answer.body))
                    continue
                if answer.status == 204:
                    backoff.reset()
                    delay = max(0.0, MIN_POLL_INTERVAL - (time.monotonic() - asked))
                else:
                    delay = self._refused(answer, backoff)
            except asyncio.CancelledError:
                return
            except (TimeoutError, OSError, ConnectionError, ValueError):
                delay = self._after(None, backoff)
            await _sleep(stop, delay)

    async def _run(self, stop: asyncio.Event, item: dict[str, Any]) -> None:
        work_id = str(item["id"])
        self.runs[work_id] = self.runs.get(work_id, 0) + 1
        command = str(item.get("command", ""))
        seconds = float(command.split()[1]) if command.startswith("sleep ") else 0.0
        await _sleep(stop, seconds)
        worker_id = self.worker_id or ""
        raw = request_bytes(
            self.url,
            self.token,
            lambda c: c.report(worker_id, work_id, exit_code=0, output_tail="", error=None),
        )
        backoff = Backoff()
        while True:  # as Daemon.deliver: until taken, or refused for good
            try:
                answer = await self._send("result", raw, self.timeout)
                if 200 <= answer.status < 300 or answer.status in (404, 409, 422):
                    return
                delay = self._after(answer, backoff)
            except (TimeoutError, OSError, ConnectionError):
                delay = self._after(None, backoff)
            if stop.is_set():
                return
            await _sleep(stop, delay)


async def _sleep(stop: asyncio.Event, seconds: float) -> None:
    if seconds <= 0:
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


LAG_EVERY = 0.05


async def watch_lag(stop: asyncio.Event, lags: list[tuple[float, float]]) -> None:
    """How late this event loop runs what is due: every ``LAG_EVERY`` seconds,
    (when, seconds late) of a sleep's wake-up. A request a replayed daemon times
    includes such lateness, which a daemon, a process of its own, does not have."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        due = loop.time() + LAG_EVERY
        await asyncio.sleep(LAG_EVERY)
        lags.append((time.time(), max(0.0, loop.time() - due)))


async def run_fleet(
    daemons: list[ReplayDaemon],
    *,
    start_at: float,
    spacing: float,
    heartbeat: float,
    ended: Any,
    lags: list[tuple[float, float]] | None = None,
) -> None:
    """Start each daemon at ``start_at + k·spacing``, its first heartbeat at a random
    point of its first interval; run until ``ended()`` says so. ``lags``, when
    given, gets the loop's lateness (:func:`watch_lag`)."""
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    if lags is not None:
        tasks.append(asyncio.ensure_future(watch_lag(stop, lags)))

    async def start(k: int, d: ReplayDaemon) -> None:
        await _sleep(stop, start_at + k * spacing - time.time())
        tasks.append(asyncio.ensure_future(d.polls(stop)))
        tasks.append(asyncio.ensure_future(d.beats(stop, random.uniform(0.0, heartbeat))))

    starters = [asyncio.ensure_future(start(k, d)) for k, d in enumerate(daemons)]
    while not ended():
        await asyncio.sleep(0.5)
    stop.set()
    for t in starters + tasks:
        t.cancel()
    await asyncio.gather(*starters, *tasks, return_exceptions=True)
