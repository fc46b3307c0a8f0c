"""The health probes: ``/healthz`` (the process answers) and ``/readyz`` (the
database answers too), and the probe listener that serves both on a port of their own.

``/readyz`` must answer while the shared thread pool is busy (a flood, a slow
query), so its ``SELECT 1`` runs on one dedicated thread, bounded in time: a
database that does not answer within :data:`READY_TIMEOUT` seconds is not ready.

On the main listener a probe's new connection queues behind every other one the
event loop has to take first: under a flood of 200 unauthenticated clients that is
a few hundred milliseconds however cheap each refusal is. ``lakeshore serve
--probe-port`` therefore also serves the two probes from :class:`ProbeListener`, a
plain HTTP server on threads of its own, outside the event loop, answering the same
documents. Point an orchestrator's probes there. It also serves ``/metrics`` without a
token (the probe port is the operator's own network's): point Prometheus there too.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .problem import PROBLEM_JSON, problem_bytes

READY_TIMEOUT = 5.0
PROBE_TIMEOUT = 5.0
"""Seconds a probe connection may take to send its request line and headers."""


def _executor(app: Any) -> ThreadPoolExecutor:
    pool: ThreadPoolExecutor | None = getattr(app.state, "ready_pool", None)
    if pool is None:
        pool = app.state.ready_pool = ThreadPoolExecutor(1, thread_name_prefix="readyz")
    return pool


def _select_one(engine: Any) -> None:
    from sqlalchemy import text

    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


def _not_ready(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"the database did not answer within {timeout:g} s"
    return f"database unreachable ({type(exc).__name__})"  # the type only: a driver's text may carry the URL


async def database_ready(app: Any, timeout: float = READY_TIMEOUT) -> str | None:
    """None when the database answers ``SELECT 1`` in time, else why not."""
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(_executor(app), _select_one, app.state.engine)
    try:
        await asyncio.wait_for(asyncio.shield(future), timeout)
    except Exception as exc:
        return _not_ready(exc, timeout)
    return None


def database_ready_blocking(app: Any, timeout: float = READY_TIMEOUT) -> str | None:
    """:func:`database_ready` for a thread that is not the event loop's."""
    future: Future[None] = _executor(app).submit(_select_one, app.state.engine)
    try:
        future.result(timeout)
    except Exception as exc:
        return _not_ready(exc, timeout)
    return None


def healthy(app: Any) -> dict[str, object]:
    """The ``/healthz`` document."""
    from dreamlake import __version__

    return {"status": "ok", "version": __version__, "database": app.state.engine.dialect.name}


INSECURE_HTTP = "plain HTTP off loopback (--insecure-http): tokens cross the network in clear text"


def ready(app: Any) -> dict[str, object]:
    """The ``/readyz`` document (when the database answered); a server serving plain
    HTTP off loopback says so in it."""
    doc: dict[str, object] = {**healthy(app), "status": "ready"}
    if getattr(app.state, "insecure_http", False):
        doc["insecureHttp"] = True
        doc["warning"] = INSECURE_HTTP
    return doc


class ProbeListener:
    """``GET``/``HEAD`` ``/healthz`` and ``/readyz`` on ``host:port``, one thread per
    probe; every other path is 404. Start with :meth:`start`, end with :meth:`stop`."""

    def __init__(self, app: Any, host: str, port: int, context: Any = None) -> None:
        self.app = app
        self.server = _Server((host, port), _handler(app))
        self.server.tls = context  # an ssl.SSLContext: HTTPS, as on the main port
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="probe-listener", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> ProbeListener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


def _json(doc: dict[str, object]) -> bytes:
    """As the main port's JSON responses encode it (compact), byte for byte."""
    return json.dumps(doc, separators=(",", ":")).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    tls: Any = None

    def get_request(self) -> tuple[Any, Any]:
        """The accepted connection, wrapped in TLS when serving it; its handshake
        runs on the probe's own thread (bounded by PROBE_TIMEOUT), never here."""
        conn, addr = super().get_request()
        if self.tls is not None:
            conn = self.tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        return conn, addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A probe that hung up or stalled is not worth a traceback on stderr."""
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            super().handle_error(request, client_address)


def _handler(app: Any) -> type[BaseHTTPRequestHandler]:
    class Probe(BaseHTTPRequestHandler):
        timeout = PROBE_TIMEOUT
        server_version = "lakeshore-probes"

        def setup(self) -> None:
            super().setup()  # the timeout first: a silent client cannot hold the handshake
            handshake = getattr(self.connection, "do_handshake", None)
            if handshake is not None:
                handshake()

        def do_GET(self) -> None:
            self._answer(body=True)

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def _answer(self, *, body: bool) -> None:
            path = self.path.partition("?")[0]
            if path == "/healthz":
                status, data, kind = 200, _json(healthy(app)), "application/json"
            elif path == "/metrics":
                from .metrics.route import render

                status, (data, kind) = 200, render(app)
            elif path == "/readyz":
                why = database_ready_blocking(app)
                if why is None:
                    status, data, kind = 200, _json(ready(app)), "application/json"
                else:
                    status, data, kind = 503, problem_bytes(503, "unavailable", why), PROBLEM_JSON
            else:
                detail = "the probe listener serves /healthz, /readyz and /metrics only"
                status, data, kind = 404, problem_bytes(404, "not_found", detail), PROBLEM_JSON
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # probes every few seconds would drown the server's log

    return Probe
