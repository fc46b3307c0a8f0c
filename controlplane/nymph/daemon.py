"""The daemon loop: register, long-poll for work, run it, report.

It always initiates the connection, and keeps it: one keep-alive HTTP/1.1
connection carries the long-poll, back to back; another carries register, the
heartbeats and results while it runs work, and is closed again once it is idle,
so an idle daemon holds exactly one connection. A held long-poll proves the
daemon alive (the server counts a worker with a poll in flight as seen), so a
separate heartbeat is sent only while a command runs or its result is being sent.

Every failure to reach the control plane is transient: it retries with capped
exponential backoff and full jitter (a random wait between 0 and the cap of the
attempt, so a fleet whose server restarts comes back spread over the window, not
in one second), waits at least what a 503's ``Retry-After`` asks, and never exits
on one. A server that goes away under its held poll (killed, crashed: no 503 to
spread its fleet) makes it wait over :data:`LOST_SPREAD` before its first try again,
so the fleet does not come back within one backoff window of half a second. Given
several servers (replicas over one database) it moves to the next after a failure
to reach one. A 404 for its worker (the server forgot it) means
register again. On stop (SIGTERM/SIGINT) it kills a running command, deregisters
and returns 0.

On suspend (SIGUSR1, sent by ``dreamlake provider suspend``) it drains instead: it
takes no new work, lets the running item finish (a SIGTERM after that cuts it short
and reports it failed, as a stop does), deregisters and exits with
:data:`SUSPENDED_EXIT`, which tells a supervisor not to restart it.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..client import ApiFailure, Client, Unreachable
from .refusals import Repeats, refused_line
from .runner import ProcessRunner, RunResult

MIN_POLL_INTERVAL = 1.0
IDLE_WAKE_SECONDS = 30.0  # an idle heartbeat thread looks at stop this often
NOT_STARTED = "the daemon was stopping and did not start the command"
MAX_REJECTED_REPORTS = 5  # consecutive 5xx answers to one result before it is dropped
SUSPENDED_EXIT = 75  # exit status after a suspend; systemd units do not restart on it
# A server that went away under a held poll (killed, crashed): the first try again is
# drawn over this window, so its whole fleet comes back over seconds, as a restart's
# Retry-After (1-10 s) spreads it, instead of every daemon within half a second.
LOST_SPREAD = 10.0


_LOG = logging.getLogger("nymph")


def log(message: str, level: int = logging.INFO) -> None:
    """One line of the daemon's log (``logsetup`` decides text or JSON lines)."""
    _LOG.log(level, message)


@dataclass
class Backoff:
    """Capped exponential backoff with full jitter: the n-th wait in a row is
    U(0, min(cap, base·2ⁿ)), so daemons that failed together retry apart."""

    base: float = 0.5
    cap: float = 15.0
    failures: int = 0

    def window(self) -> float:
        """The longest the next wait can be."""
        return min(self.cap, self.base * (2 ** min(self.failures, 16)))

    def next_delay(self, lost: bool = False) -> float:
        """The next wait; ``lost``: a working connection was just lost, so a first
        failure waits over ``LOST_SPREAD`` (capped) rather than the base window."""
        delay = self.window()
        if lost and self.failures == 0:
            delay = min(self.cap, max(delay, LOST_SPREAD))
        self.failures += 1
        return random.uniform(0.0, delay)

    def reset(self) -> None:
        self.failures = 0


@dataclass
class DaemonConfig:
    provider: str
    queues: list[str]
    instance_id: str
    host: str
    version: str
    poll_wait: float = 20.0
    max_backoff: float = 15.0
    heartbeat_seconds: float | None = None  # None: what the server suggests
    identity: str | None = None  # the provider identity this daemon claims for
    servers: list[str] = field(default_factory=list)  # more replicas to move to


@dataclass
class Daemon:
    client: Client
    config: DaemonConfig
    runner: ProcessRunner = field(default_factory=ProcessRunner)
    token_loader: Callable[[], str | None] | None = None
    credentials: Any = None  # a client certificate over TLS (credentials.Credentials)
    stop: threading.Event = field(default_factory=threading.Event)
    draining: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._worker_id: str | None = None
        self._heartbeat = self.config.heartbeat_seconds or 10.0
        self._reachable: bool | None = None
        self._busy = threading.Event()  # set while a command runs or its result is sent
        self._alive_at = time.monotonic()  # when the server last saw this daemon
        # the long-poll's own connection; ``client`` carries everything else
        sibling = getattr(self.client, "sibling", None)
        self.poller: Client = sibling() if sibling is not None else self.client
        servers = [self.client.url.rstrip("/")]
        servers += [u.rstrip("/") for u in self.config.servers if u.rstrip("/") not in servers]
        self._servers = servers
        self._url_lock = threading.Lock()
        self._cert_lock = threading.Lock()
        self._refusals = Repeats()  # the token refused (401) in a row
        if self.credentials is not None:
            self.credentials.apply(self.client, self.poller)

    # -- state --------------------------------------------------------------------

    @property
    def worker_id(self) -> str | None:
        return self._worker_id

    def _forget(self, worker_id: str) -> None:
        with self._lock:
            if self._worker_id == worker_id:
                self._worker_id = None

    def _mark(self, reachable: bool, why: str = "") -> None:
        if reachable != self._reachable:
            if reachable:
                log(f"connected to {self.client.url} (namespace {self.client.namespace})")
            else:
                log(f"control plane unreachable, retrying: {why}", logging.WARNING)
        self._reachable = reachable

    def _accepted(self) -> None:
        """A request went through: reachable, and the token's refusals are over."""
        self._mark(True)
        refused = self._refusals.clear()
        if refused > 1:
            log(f"the control plane accepts the token again (refused {refused} times before)")

    def _refresh_token(self, refused: bool = False) -> None:
        if self.credentials is not None:
            if refused and self.client.cert is not None:
                self.credentials.refused()
            self.credentials.apply(self.client, self.poller)
        elif self.token_loader is not None:
            token = self.token_loader()
            if token:  # the long-poll's client too: it asks with a token of its own
                self.client.token = self.poller.token = token

    def _certificate(self) -> None:
        """Ask for this daemon's certificate when one is due (first, or renewal)."""
        if self.credentials is not None and self.credentials.due():
            with self._cert_lock:
                self.credentials.step(self.client, self.poller)

    def ensure_registered(self) -> str:
        self._certificate()
        with self._lock:
            if self._worker_id is not None:
                return self._worker_id
            self._refresh_token()
            c = self.config
            out = self.client.register(
                c.provider,
                c.instance_id,
                host=c.host,
                queues=c.queues,
                version=c.version,
                identity=c.identity,
            )
            self._worker_id = str(out["workerId"])
            self._alive_at = time.monotonic()
            self._accepted()
            if self.config.heartbeat_seconds is None:
                self._heartbeat = float(out.get("heartbeatSeconds") or 10.0)
            log(
                f"registered worker {self._worker_id} claiming provider {c.provider!r} "
                f"as {c.instance_id} (queues: {', '.join(c.queues) or '-'})"
            )
            return self._worker_id

    def _move_on(self, failed: str | None) -> None:
        """After failing to reach ``failed``: the next server, when there are
        several (once per failure, whichever loop saw it first)."""
        if len(self._servers) < 2 or failed is None:
            return
        with self._url_lock:
            if self.client.url != failed:
                return  # another loop has moved on already
            at = self._servers.index(failed) if failed in self._servers else -1
            url = self._servers[(at + 1) % len(self._servers)]
            log(f"trying the next control plane: {url}")
            self.client.url = url
            self.poller.url = url

    def _failed(
        self, exc: Exception, backoff: Backoff, worker_id: str | None, *, lost: bool = False
    ) -> float:
        """Handle one failed call; returns how long to wait before the next
        (``lost``: it cut a held poll, see :data:`LOST_SPREAD`)."""
        if isinstance(exc, Unreachable):
            self._mark(False, exc.message)
            self._move_on(getattr(exc, "url", None))
        elif isinstance(exc, ApiFailure):
            self._mark(True)
            if exc.status == 404 and worker_id is not None:
                log("the control plane does not know this worker; registering again")
                self._forget(worker_id)
                return 0.0
            if exc.status == 401:
                count = self._refusals.seen()  # said once, then at growing intervals
                if count is not None:
                    log(refused_line(count, self._refusals.gap), logging.WARNING)
                self._refresh_token(refused=True)
            elif exc.status in (429, 503) and exc.retry_after is not None:
                # shedding load: at least what it asks, and our own jitter on top
                delay = backoff.next_delay()
                log(
                    f"control plane is busy ({exc.status}); retrying in "
                    f"{exc.retry_after + delay:.1f}s",
                    logging.DEBUG,
                )
                return exc.retry_after + delay
            else:
                log(f"control plane answered {exc.status} {exc.error}: {exc.detail}")
        else:
            log(f"unexpected error: {type(exc).__name__}: {exc}", logging.ERROR)
        return backoff.next_delay(lost=lost and isinstance(exc, Unreachable))

    # -- loops ------------------------------------------------------------------------

    def heartbeat_loop(self) -> None:
        """While work runs (or its result is sent): a heartbeat every interval after
        the server last saw this daemon. Idle, the held long-poll is the sign of life."""
        backoff = Backoff(cap=self.config.max_backoff)
        retry_at = 0.0
        while not self.stop.is_set():
            # idle, this thread sleeps until work starts (no wake-ups to pay for)
            if not self._busy.wait(IDLE_WAKE_SECONDS):
                continue
            now = time.monotonic()
            due = max(self._alive_at + self._heartbeat, retry_at)
            if now < due:
                self.stop.wait(due - now)
                continue
            worker_id: str | None = None
            try:
                worker_id = self.ensure_registered()
                self.client.heartbeat(worker_id)
                self._alive_at = time.monotonic()
                self._accepted()
                backoff.reset()
            except Exception as exc:
                retry_at = time.monotonic() + self._failed(exc, backoff, worker_id)

    def poll_loop(self) -> None:
        backoff = Backoff(cap=self.config.max_backoff)
        while not self.stop.is_set() and not self.draining.is_set():
            worker_id: str | None = None
            try:
                worker_id = self.ensure_registered()
                if not self._busy.is_set():
                    self.client.close()  # idle: the long-poll is this daemon's one connection
                asked = time.monotonic()
                item = self.poller.poll_work(worker_id, wait=self.config.poll_wait)
                self._alive_at = time.monotonic()
                self._accepted()
                backoff.reset()
                if item is not None:
                    self.execute(worker_id, item)
                    continue
                # never spin: a short (or zero) long-poll still paces itself
                delay = max(0.0, MIN_POLL_INTERVAL - (time.monotonic() - asked))
            except Exception as exc:
                # a poll of a server this daemon was reaching: the server went away
                lost = self._reachable is True and worker_id is not None
                delay = self._failed(exc, backoff, worker_id, lost=lost)
            self.stop.wait(delay)

    def execute(self, worker_id: str, item: dict[str, Any]) -> None:
        self._busy.set()
        try:
            self._execute(worker_id, item)
        finally:
            self._busy.clear()

    def _execute(self, worker_id: str, item: dict[str, Any]) -> None:
        work_id = str(item["id"])
        if self.stop.is_set() or self.draining.is_set():  # handed over as we were stopping
            log(f"not running work {work_id}: stopping")
            self.deliver(worker_id, work_id, RunResult(None, "", NOT_STARTED))
            return
        log(f"running work {work_id}: {item['command']!r}")
        try:
            result = self.runner.run(
                str(item["command"]),
                timeout=item.get("timeoutSeconds"),
                stop=self.stop,
                env={
                    "DREAMLAKE_WORK_ID": work_id,
                    "DREAMLAKE_PROVIDER": self.config.provider,
                    "DREAMLAKE_QUEUE": str(item.get("queue") or ""),
                },
            )
        except Exception as exc:  # a failure of the runner itself is still a result
            result = RunResult(None, "", f"the runner failed: {type(exc).__name__}: {exc}")
        log(
            f"work {work_id} finished: exit {result.exit_code}"
            + (f" ({result.error})" if result.error else "")
        )
        self.deliver(worker_id, work_id, result)

    def deliver(self, worker_id: str, work_id: str, result: RunResult) -> None:
        """Report a result, retrying through outages; gives up when the server says
        the result can no longer be taken (404/409/422), when it keeps failing on it
        (MAX_REJECTED_REPORTS server errors in a row: the poll loop must not stall
        on one result), or when the daemon stops."""
        backoff = Backoff(cap=self.config.max_backoff)
        stopping_since: float | None = None
        server_errors = 0
        while True:
            try:
                self.client.report(
                    worker_id,
                    work_id,
                    exit_code=result.exit_code,
                    output_tail=result.output_tail,
                    error=result.error,
                )
                return
            except ApiFailure as exc:
                if exc.status in (404, 409, 422):
                    log(f"result of {work_id} not accepted: {exc.status} {exc.error}: {exc.detail}")
                    return
                # a 503 with Retry-After is the server shedding load, not refusing this
                # result: it is retried as asked, however often
                shed = exc.status in (429, 503) and exc.retry_after is not None
                server_errors = server_errors + 1 if exc.status >= 500 and not shed else 0
                if server_errors >= MAX_REJECTED_REPORTS:
                    log(f"giving up reporting {work_id}: {server_errors} server errors in a row")
                    return
                delay = self._failed(exc, backoff, None)
            except Exception as exc:
                delay = self._failed(exc, backoff, None)
            if self.stop.is_set():
                stopping_since = stopping_since or time.monotonic()
                if time.monotonic() - stopping_since > 5.0:
                    log(f"giving up reporting {work_id}: stopping")
                    return
                time.sleep(min(delay, 1.0))
            else:
                self.stop.wait(delay)

    def _abort_poll(self) -> None:
        abort = getattr(self.poller, "abort", None)
        if abort is not None:
            abort()

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> list[threading.Thread]:
        threads = [
            threading.Thread(target=self.heartbeat_loop, name="nymph-heartbeat", daemon=True),
            threading.Thread(target=self.poll_loop, name="nymph-poll", daemon=True),
        ]
        for t in threads:
            t.start()
        return threads

    def drain(self, threads: list[threading.Thread]) -> None:
        """Suspend: no new work; the running item finishes (``stop`` cuts it short),
        then stop and deregister."""
        self.draining.set()
        log("suspending: taking no new work; waiting for the running item to finish")
        time.sleep(0.05)  # let a poll that just returned an item mark itself busy
        while self._busy.is_set() and not self.stop.wait(0.1):
            pass
        self.shutdown(threads)

    def shutdown(self, threads: list[threading.Thread], grace: float = 8.0) -> None:
        """Stop the loops (a running command is killed and reported), then deregister.
        A long-poll in flight is not waited for: deregistering ends it."""
        self.stop.set()
        end = time.monotonic() + grace
        time.sleep(0.05)  # let a poll that just returned an item mark itself busy
        while self._busy.is_set() and time.monotonic() < end:
            time.sleep(0.05)
        worker_id = self._worker_id
        if worker_id is None:
            self._abort_poll()
            return
        previous = self.client.timeout
        self.client.timeout = min(previous, 5.0)
        try:
            self.client.deregister(worker_id)
            log(f"deregistered worker {worker_id}")
        except Exception as exc:
            log(f"could not deregister worker {worker_id}: {exc}")
        finally:
            self.client.timeout = previous
            self.client.close()
            self._abort_poll()  # a poll still held ends now, not at its wait
