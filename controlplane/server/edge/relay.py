"""One edge process: accept on the server's listening sockets, refuse what has gone
stale, do the TLS handshake, relay the bytes to the server over its Unix socket.

Started by :mod:`.supervisor` as ``python -m dreamlake.controlplane.server.edge``
with the listening sockets inherited and its configuration (JSON) on stdin; it
imports the standard library and uvloop (when installed) only.

* **Accepting**: every edge watches every listening socket, so an edge busy with
  handshakes leaves the queue to one that is free. With
  :data:`HANDSHAKES_AT_ONCE` handshakes in progress it stops accepting until one
  ends (connections then wait in the kernel's queue, where another edge may take
  them), but takes one more every :data:`BUSY_PAUSE` seconds, so connections that
  never send a hello (held until the handshake's 10 s timeout) cannot stop it. A
  handshake mostly waits for its client's next flight (its certificate), which on
  a busy client takes tens to hundreds of milliseconds: the bound is far above the
  handshakes the CPU does at once (16 starved a ramp of 2,000 daemons).
* **Stale**: a connection whose client has closed it, or whose first bytes waited
  longer than a daemon waits, is reset before any handshake (:mod:`.stale`).
* **Relaying**: after the handshake the edge connects to one of the server's Unix
  sockets (taking turns, as the server's loop takes one connection per socket per
  turn),
  sends the preamble (:mod:`.wire`), and copies bytes both ways with flow control;
  either side closing closes the other once what it has is written.
* **Signals**: ``SIGHUP`` loads the certificate and key again into the live
  context (a pair that does not load is refused and the old one kept);
  ``SIGTERM``/``SIGINT`` stop accepting at once, and the edge ends when its last
  relayed connection has closed (the server closes them as it drains), or after
  ``drain_seconds``. It gets ``SIGTERM`` when the server's process ends.
* **Counts**: once a second when they changed, a line ``counts closed=N waited=N
  handshakes=N failed=N`` (running totals) on stdout, for the server's metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import ssl
import sys
from typing import Any

from . import stale, wire

HANDSHAKES_AT_ONCE = 256
BUSY_PAUSE = 0.05  # seconds an edge with that many leaves the queue to the others
ACCEPTS_PER_TURN = 8
HANDSHAKE_SECONDS = 10.0
CONNECT_SECONDS = 5.0  # to reach the server's relay sockets, full as they may be
READ_AT_MOST = 256 * 1024  # buffered on one side before the other side stops reading
log = logging.getLogger("lakeshore.edge")


def _context(config: dict[str, Any]) -> ssl.SSLContext:
    """The server's context, as ``tls.server_context`` and ``tls.accept_client_certs``
    make it, with the session-ticket keys every edge shares."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(config["cert"], config["key"])
    if config.get("client_ca"):
        context.load_verify_locations(cadata=config["client_ca"])
        context.verify_mode = ssl.CERT_OPTIONAL
    if config.get("tickets") and not share_tickets(context, bytes.fromhex(config["tickets"])):
        log.warning(
            "edge %d: TLS sessions are resumed only on the edge that made them", os.getpid()
        )
    return context


_CTRL_SET_TICKET_KEYS = 59  # SSL_CTRL_SET_TLSEXT_TICKET_KEYS
TICKET_KEYS_SIZE = 80


def share_tickets(context: ssl.SSLContext, keys: bytes) -> bool:
    """Encrypt ``context``'s session tickets with ``keys`` (80 bytes, the same in
    every edge), so a client resumes its session on whichever edge accepts its next
    connection; OpenSSL makes random keys per context otherwise. The standard
    library has no call for it: this reaches the context's ``SSL_CTX`` (the field
    after the object's header) and calls OpenSSL's ``SSL_CTX_ctrl``, after checking
    that the pointer is the context's (its options and verify mode read back the
    same). Whether the keys were set."""
    if len(keys) != TICKET_KEYS_SIZE:
        return False
    try:
        import ctypes

        lib = ctypes.CDLL(ssl._ssl.__file__)  # type: ignore[attr-defined]
        ctrl, options, mode = lib.SSL_CTX_ctrl, lib.SSL_CTX_get_options, lib.SSL_CTX_get_verify_mode
        ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
        ctrl.restype = ctypes.c_long
        options.argtypes = mode.argtypes = [ctypes.c_void_p]
        options.restype, mode.restype = ctypes.c_uint64, ctypes.c_int
        ctx = ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value
        if not ctx or options(ctx) != int(context.options) or mode(ctx) != int(context.verify_mode):
            return False
        buffer = ctypes.create_string_buffer(keys, TICKET_KEYS_SIZE)
        return bool(ctrl(ctx, _CTRL_SET_TICKET_KEYS, TICKET_KEYS_SIZE, buffer) == 1)
    except (OSError, AttributeError, ValueError):
        return False


class Half(asyncio.Protocol):
    """One side of a relayed connection: what it reads is written to ``other``."""

    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.transport: Any = None
        self.other: Half | None = None
        self.early: list[bytes] = []  # read before the other side was connected
        self.closed = False

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        other = self.other
        if other is None or other.transport is None:
            self.early.append(data)
            if sum(map(len, self.early)) > READ_AT_MOST:
                self.transport.pause_reading()
            return
        other.transport.write(data)

    def eof_received(self) -> bool:
        self._close_other()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._close_other()
        if self.other is not None and self.other.closed:
            self.edge.relay_ended()

    def _close_other(self) -> None:
        other = self.other
        if other is not None and other.transport is not None and not other.closed:
            other.transport.close()  # after what is buffered is written

    def pause_writing(self) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.resume_reading()

    def link(self, other: Half) -> None:
        """Both sides are connected: from now on each writes what it reads to the other."""
        self.other, other.other = other, self
        for half in (self, other):
            if half.early:
                half.other.transport.write(b"".join(half.early))  # type: ignore[union-attr]
                half.early.clear()
                half.transport.resume_reading()
        if self.closed or other.closed:
            for half in (self, other):
                if not half.closed:
                    half.transport.close()


class Edge:
    def __init__(self, config: dict[str, Any]) -> None:
        self.loop = asyncio.get_running_loop()
        self.context = _context(config)
        self.config = config
        self.addresses: list[str] = list(config["relay"])
        self.turn = os.getpid()  # edges start their turns at different sockets
        self.bound_ms = int(config.get("stale_after_ms", stale.STALE_AFTER_MS))
        self.listeners = [socket.socket(fileno=fd) for fd in config["fds"]]
        for sock in self.listeners:
            sock.setblocking(False)
        self.accepting = False
        self.stopping = False
        self.handshaking = 0
        self.over_until = 0.0
        self.tasks: set[asyncio.Task[None]] = set()
        self.relays = 0
        self.counts = {"closed": 0, "waited": 0, "handshakes": 0, "failed": 0, "unrelayed": 0}
        self.reported: dict[str, int] = dict(self.counts)
        self.done = self.loop.create_future()

    # -- accepting ---------------------------------------------------------------

    def accept(self, on: bool) -> None:
        if on == self.accepting or (on and self.stopping):
            return
        self.accepting = on
        for sock in self.listeners:
            if on:
                self.loop.add_reader(sock.fileno(), self._readable, sock)
            else:
                self.loop.remove_reader(sock.fileno())

    def _readable(self, listener: socket.socket) -> None:
        for _ in range(ACCEPTS_PER_TURN):
            if self.handshaking >= HANDSHAKES_AT_ONCE:
                now = self.loop.time()
                if now < self.over_until:  # busy: leave the queue to a free edge a while
                    self.accept(False)
                    self.loop.call_later(self.over_until - now, self._busy_over)
                    return
                # clients that send no hello must not stop it for good: one more now
                self.over_until = now + BUSY_PAUSE
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of files, say: the queue keeps it meanwhile
                log.warning("edge %d cannot accept: %s", os.getpid(), exc)
                return
            why = stale.why_stale(conn, self.bound_ms)
            if why is not None:
                stale.refuse(conn)
                self.counts[why] += 1
                continue
            conn.setblocking(False)
            self.handshaking += 1
            task = self.loop.create_task(self._serve(conn))
            self.tasks.add(task)  # the loop holds its tasks weakly
            task.add_done_callback(self.tasks.discard)

    def _busy_over(self) -> None:
        if not self.stopping:
            self.accept(True)

    async def _serve(self, conn: socket.socket) -> None:
        inbound = Half(self)
        try:
            try:
                transport, _ = await self.loop.connect_accepted_socket(
                    lambda: inbound, conn, ssl=self.context, ssl_handshake_timeout=HANDSHAKE_SECONDS
                )
            except (TimeoutError, OSError, ssl.SSLError, ConnectionError):
                self.counts["failed"] += 1
                with contextlib.suppress(OSError):
                    conn.close()
                return
        finally:
            self.handshaking -= 1
            if not self.accepting and not self.stopping:
                self.accept(True)
        self.counts["handshakes"] += 1
        transport.pause_reading()
        self.relays += 1
        try:
            ssl_object = transport.get_extra_info("ssl_object")
            cert = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
            peer = transport.get_extra_info("peername") or ("", 0)
            local = transport.get_extra_info("sockname") or ("", 0)
            unix = await self._connect()
            outbound = Half(self)
            await self.loop.create_unix_connection(lambda: outbound, sock=unix)
        except OSError as exc:
            log.warning("edge %d cannot reach the server: %s", os.getpid(), exc)
            self.counts["unrelayed"] += 1
            transport.abort()
            self.relay_ended()
            return
        outbound.transport.write(wire.encode(peer[:2], local[:2], cert))
        inbound.link(outbound)
        if not inbound.closed:
            transport.resume_reading()

    async def _connect(self) -> socket.socket:
        """A connection to one of the server's relay sockets, taking turns. A Unix
        socket's connect is done at once or refused at once (``EAGAIN``: its queue
        is full), never in progress: a full one is tried again a little later."""
        ends = self.loop.time() + CONNECT_SECONDS
        pause = 0.002
        while True:
            address = self.addresses[self.turn % len(self.addresses)]
            self.turn += 1
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.setblocking(False)
            try:
                unix.connect(address)
                return unix
            except (BlockingIOError, InterruptedError):
                unix.close()
            except OSError:
                unix.close()
                raise
            if self.loop.time() > ends:
                raise OSError("the server's relay sockets stayed full")
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)

    def relay_ended(self) -> None:
        self.relays -= 1
        if self.stopping and self.relays <= 0 and not self.done.done():
            self.done.set_result(None)

    # -- signals -----------------------------------------------------------------

    def reload(self) -> None:
        try:
            _context(self.config)  # whole and matching, or refused
            self.context.load_cert_chain(self.config["cert"], self.config["key"])
        except (OSError, ssl.SSLError) as exc:
            log.error(
                "edge %d kept its certificate, the new one did not load: %s", os.getpid(), exc
            )
            return
        log.info("edge %d reloaded its certificate", os.getpid())

    def stop(self) -> None:
        """Stop accepting at once; end once the last relay has closed."""
        if self.stopping:
            return
        self.accept(False)
        self.stopping = True
        for sock in self.listeners:
            sock.close()
        self.loop.call_later(float(self.config.get("drain_seconds", 30.0)), self._give_up)
        if self.relays <= 0 and self.handshaking <= 0 and not self.done.done():
            self.done.set_result(None)

    def _give_up(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    async def report(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.flush()

    def flush(self) -> None:
        if self.counts != self.reported:
            line = " ".join(f"{k}={v}" for k, v in self.counts.items())
            with contextlib.suppress(OSError):
                sys.stdout.write(f"counts {line}\n")
                sys.stdout.flush()
            self.reported = dict(self.counts)


def _die_with_parent(parent: int) -> None:
    """``SIGTERM`` when the server's process ends (``PR_SET_PDEATHSIG``)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it ended before the call
        os.kill(os.getpid(), signal.SIGTERM)


def _open_files() -> None:
    """As many open files as allowed (the server raised its own limit already): an
    edge holds two per relayed connection."""
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, OSError, ValueError):
        pass


async def serve(config: dict[str, Any]) -> None:
    _open_files()
    edge = Edge(config)
    loop = edge.loop
    loop.add_signal_handler(signal.SIGTERM, edge.stop)
    loop.add_signal_handler(signal.SIGINT, edge.stop)
    loop.add_signal_handler(signal.SIGHUP, edge.reload)
    _die_with_parent(int(config["parent"]))
    edge.accept(True)
    reporter = loop.create_task(edge.report())
    await edge.done
    reporter.cancel()
    edge.flush()


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    config = json.loads(sys.stdin.buffer.read())
    runner: Any
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    runner(serve(config))
