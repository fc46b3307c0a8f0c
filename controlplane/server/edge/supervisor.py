"""The server's side of its edges: the Unix socket they relay to, starting them,
restarting one that ends, and passing reloads and shutdown on.

* The Unix sockets (``relays`` of them: the server's loop takes one connection
  per socket per turn, as on its TCP port) have names in the abstract namespace
  (nothing in the file system), and the server serves only connections whose peer process is one of its
  own edges (``SO_PEERCRED``, checked in :mod:`.relayed`): no other process can
  claim a client's certificate.
* An edge that ends while the server runs is started again at once (after a
  second, when it ended within a second of its start), and counted
  (``lakeshore_tls_edge_restarts_total``).
* Every edge encrypts session tickets with the same keys (made here, for this
  server's life), so a client's next connection resumes its TLS session on
  whichever edge takes it.
* Each edge's counts (stale connections refused, handshakes done and failed) go to
  the server's metrics.
* :meth:`Edges.reload` (the certificate reloaded: ``SIGHUP`` or a changed file)
  sends ``SIGHUP`` to every edge; :meth:`Edges.stop_accepting` sends ``SIGTERM``:
  they stop accepting at once and relay what is open until the server has closed
  it; :meth:`Edges.stop` waits for them to end.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import IO, Any

from . import stale

MODULE = "dreamlake.controlplane.server.edge"
QUICK_DEATH = 1.0  # an edge that ends sooner after its start is restarted after this
log = logging.getLogger("lakeshore.serve")


class Edge:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.started = time.monotonic()
        self.seen: dict[str, int] = {}  # its running totals, as last reported


class Edges:
    """``count`` edge processes on ``listeners`` (the server's listening sockets)."""

    def __init__(
        self,
        count: int,
        listeners: list[socket.socket],
        *,
        cert: str,
        key: str,
        client_ca: bytes | None,
        state: Any = None,
        backlog: int = 4096,
        drain_seconds: float = 30.0,
        relays: int = 1,
        stale_after_ms: int = stale.STALE_AFTER_MS,
    ) -> None:
        self.count = max(1, count)
        self.listeners = listeners
        self.state = state
        name = f"\0lakeshore-edge-{os.getpid()}-{secrets.token_hex(8)}"
        self.addresses = [f"{name}-{i}" for i in range(max(1, relays))]
        self.sockets: list[socket.socket] = []
        for address in self.addresses:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sockets.append(sock)
            sock.bind(address)
            sock.listen(backlog)
        self.unix = self.sockets[0]
        self.config = {
            "cert": cert,
            "key": key,
            "client_ca": client_ca.decode() if client_ca else None,
            "relay": self.addresses,
            "fds": [sock.fileno() for sock in listeners],
            "parent": os.getpid(),
            "stale_after_ms": stale_after_ms,
            "drain_seconds": drain_seconds,
            # one session-ticket key for every edge: a session resumes on any of them
            "tickets": secrets.token_bytes(80).hex(),
        }
        self.edges: list[Edge] = []
        self.pids: set[int] = set()
        self.stopping = False
        self.restarts = 0
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # -- processes ---------------------------------------------------------------

    def _spawn(self) -> Edge:
        proc = subprocess.Popen(
            [sys.executable, "-m", MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            pass_fds=self.config["fds"],  # type: ignore[arg-type]
            close_fds=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(self.config).encode())
        proc.stdin.close()
        edge = Edge(proc)
        with self._lock:
            self.edges.append(edge)
            self.pids.add(proc.pid)
        os.set_blocking(proc.stdout.fileno(), False)
        self._selector.register(proc.stdout, selectors.EVENT_READ, edge)
        return edge

    def start(self) -> Edges:
        for _ in range(self.count):
            self._spawn()
        self._thread = threading.Thread(target=self._watch, name="tls-edges", daemon=True)
        self._thread.start()
        log.info(
            "TLS on %d edge process(es) (pids %s), relaying to the server",
            self.count,
            " ".join(str(e.proc.pid) for e in self.edges),
        )
        return self

    def is_edge(self, pid: int) -> bool:
        return pid in self.pids

    def _watch(self) -> None:
        while not (self.stopping and not self.edges):
            try:
                ready = self._selector.select(0.5)
            except (OSError, ValueError):
                if self.stopping:
                    return
                time.sleep(0.1)
                continue
            for key, _ in ready:
                edge: Edge = key.data
                stream: IO[bytes] = key.fileobj  # type: ignore[assignment]
                try:
                    chunk = stream.read()
                except OSError:
                    chunk = b""
                if chunk:
                    self._counted(edge, chunk)
                    continue
                if chunk is None:  # nothing after all
                    continue
                self._ended(edge, stream)

    def _ended(self, edge: Edge, stream: IO[bytes]) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(stream)
        stream.close()
        code = edge.proc.wait()
        with self._lock:
            self.edges.remove(edge)
            self.pids.discard(edge.proc.pid)
        if self.stopping:
            return
        log.warning("TLS edge process %d ended (exit %s): starting another", edge.proc.pid, code)
        if time.monotonic() - edge.started < QUICK_DEATH:
            time.sleep(QUICK_DEATH)
        if self.stopping:
            return
        self.restarts += 1
        from ..metrics.registry import tls_edge_restarted

        tls_edge_restarted(self.state)
        self._spawn()

    def _counted(self, edge: Edge, chunk: bytes) -> None:
        from ..metrics.registry import tls_edge_counts

        for line in chunk.decode(errors="replace").splitlines():
            if not line.startswith("counts "):
                continue
            totals: dict[str, int] = {}
            for part in line.split()[1:]:
                name, _, value = part.partition("=")
                with contextlib.suppress(ValueError):
                    totals[name] = int(value)
            added = {k: v - edge.seen.get(k, 0) for k, v in totals.items()}
            edge.seen = totals
            tls_edge_counts(self.state, added)

    # -- signals -----------------------------------------------------------------

    def _signal(self, signum: int) -> None:
        with self._lock:
            procs = [e.proc for e in self.edges]
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signum)

    def reload(self) -> None:
        """Every edge loads the certificate and key again."""
        self._signal(signal.SIGHUP)

    def stop_accepting(self) -> None:
        """Every edge stops accepting now and ends once what it relays is closed; the
        server's own copies of the listening sockets close too, so the port closes."""
        self.stopping = True
        self._signal(signal.SIGTERM)
        for sock in self.listeners:
            with contextlib.suppress(OSError):
                sock.close()

    def stop(self, wait: float = 5.0) -> None:
        """Stop accepting (if not yet), wait up to ``wait`` seconds for the edges to end,
        then kill what is left."""
        self.stop_accepting()
        ends = time.monotonic() + wait
        with self._lock:
            procs = [e.proc for e in self.edges]
        for proc in procs:
            try:
                proc.wait(max(0.0, ends - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._thread is not None:
            self._thread.join(2)
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()
