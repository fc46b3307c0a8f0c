"""One HTTP/1.1 connection to the control plane, standard library only (the daemon
runs on a host's own ``python3``, 3.9 or newer).

:class:`Connection` keeps one ``http.client`` connection open between requests
(``keep_alive=True``), or opens a new one for every request and closes it after
the answer (``keep_alive=False``: ``Connection: close``, as daemons before
keep-alive did). A kept connection the server has closed meanwhile (its
keep-alive timeout, a restart) is noticed before the next request is written and
replaced by a new one. When the server's close comes after that look, crossing
the request (it closed the idle connection as the request went out), the request
is sent once more on a new connection if that is safe: it failed while being
written (not taken), or its method is idempotent (:data:`IDEMPOTENT`) and the
close came within :data:`RESEND_WITHIN` of it. A server that goes away under a
request it held longer (a long-poll: killed, restarted) raises :class:`Dropped`,
as does an unsafe resend: the caller's backoff decides when to try again, so a
fleet whose server went away does not come back in one step. Any other failure
is raised to the caller as it is.

A kept connection carries one request at a time (a lock serializes callers); a
caller that needs two at once (a long-poll and a heartbeat) holds two. Without
keep-alive every request has a connection of its own, so callers on several
threads run side by side, as they did with urllib.
"""

from __future__ import annotations

import contextlib
import http.client
import select
import ssl  # loaded by http.client already: nothing to pay for
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Observer = Callable[["Exchange"], None]
"""Called after every request (answered or not) with what happened: how long it
took, whether it opened a new TCP connection. The fleet benchmark reads these."""

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
"""Methods sent again on a new connection when a kept one is closed under them
before any answer (RFC 9110 9.2.2): the server may have taken the first."""
RESEND_WITHIN = 1.0
"""Seconds after a request was written within which the close of its kept
connection is taken for one that crossed it (the server's idle close, one round
trip away), and an idempotent request is sent again; a later close is the server
going away under a request it held."""
_CLOSED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
           ConnectionAbortedError, ssl.SSLEOFError, ssl.SSLZeroReturnError)  # fmt: skip


class Dropped(ConnectionError):
    """The connection ended before this request's answer for a reason that is not
    about this request: a kept connection that had carried answers before, closed
    or reset by the server (its keep-alive timeout, a restart, a crash) and not
    sent again (see the module's docstring); or one :meth:`Connection.abort` ended
    (``aborted``). Not a sign of a refused client certificate: the server accepted
    this connection's handshake when it first answered on it. ``cause``: the error
    as the socket raised it."""

    def __init__(self, cause: BaseException, *, aborted: bool = False) -> None:
        what = (
            "this client ended the request (aborted)"
            if aborted
            else "it closed a kept connection before answering"
        )
        super().__init__(f"{what} ({type(cause).__name__}: {cause})")
        self.cause = cause
        self.aborted = aborted


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


@dataclass
class Exchange:
    method: str
    path: str
    status: int | None  # None: no answer (refused, reset, timed out)
    seconds: float
    new_connection: bool
    answer: Answer | None = None
    error: BaseException | None = None
    connect_seconds: float = 0.0  # of ``seconds``, opening the TCP connection
    resumed: bool = False  # a new TLS connection that resumed the last session


class Connection:
    """See the module's docstring. ``url`` is the control plane's base URL
    (``http://host:port`` or ``https://…``, optionally with a path prefix); an
    ``https`` server is verified against ``ca`` (a CA certificate file), else
    ``LAKESHORE_CA``, else the system's trust store; ``cert`` (a PEM file with a
    certificate and its key) is presented to it, and a kept connection opened with
    an older one (renewed since) is replaced before the next request. With
    ``sessions`` (:class:`~.tlsresume.Sessions`, shared by a client and its
    siblings) a new ``https`` connection offers the last TLS session this server
    gave, and keeps the one it gets once its first answer is read."""

    def __init__(
        self,
        url: str,
        *,
        keep_alive: bool = True,
        observer: Observer | None = None,
        source_address: str | None = None,
        ca: str | None = None,
        cert: str | None = None,
        sessions: Any = None,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self.prefix = parts.path.rstrip("/")
        self.keep_alive = keep_alive
        self.observer = observer
        self.source_address = source_address  # the local address to connect from
        self.ca = ca  # the CA certificate to verify an https server with (see tlsclient)
        self.cert = cert  # a client certificate and its key (PEM) to present, if any
        self.sessions = sessions  # TLS sessions to resume (tlsresume.Sessions), if any
        self.origin = f"{self.host}:{self.port or 443}"
        self._context: Any = None  # the TLS context the kept connection was opened with
        self._conn: http.client.HTTPConnection | None = None  # kept between requests
        self._active: http.client.HTTPConnection | None = None  # carrying a request now
        self._aborted: http.client.HTTPConnection | None = None  # ended by abort()
        self._lock = threading.Lock()
        self.opened = 0  # TCP connections opened so far

    # -- the connection -------------------------------------------------------------

    def _open(self, timeout: float) -> http.client.HTTPConnection:
        source = (self.source_address, 0) if self.source_address else None
        conn: http.client.HTTPConnection
        if self.scheme == "https":
            from .tlsclient import client_context  # always verifying, see tlsclient

            context = client_context(self.ca, self.cert)
            if self.keep_alive:
                self._context = context
            if self.sessions is not None:
                from .tlsresume import ResumingHTTPSConnection

                offered = self.sessions.offer(self.origin, context)
                conn = ResumingHTTPSConnection(
                    self.host, self.port, context=context, session=offered,
                    timeout=timeout, source_address=source,
                )  # fmt: skip
                try:
                    conn.connect()
                except BaseException:
                    conn.close()
                    if offered is not None:
                        self.sessions.drop(self.origin)
                    raise
                self.opened += 1
                return conn
            conn = http.client.HTTPSConnection(
                self.host, self.port, timeout=timeout, source_address=source, context=context
            )
        else:
            conn = http.client.HTTPConnection(
                self.host, self.port, timeout=timeout, source_address=source
            )
        conn.connect()
        self.opened += 1
        return conn

    def _keep_session(self, conn: http.client.HTTPConnection) -> bool:
        """After a new connection's first answer (its headers read: a TLS 1.3
        ticket comes before them), keep its TLS session for the next connection.
        Returns whether this one was resumed."""
        from .tlsresume import ResumingHTTPSConnection

        if self.sessions is None or not isinstance(conn, ResumingHTTPSConnection):
            return False
        sock = conn.tls_socket
        session = sock.session if sock is not None else None
        self.sessions.keep(self.origin, conn.tls_context, session, conn.offered, conn.resumed)
        return conn.resumed

    def _usable(self, conn: http.client.HTTPConnection) -> bool:
        """Whether a kept connection can carry another request: its socket is open
        and has nothing to read (readable while idle means the server closed it)."""
        sock = conn.sock
        if sock is None:
            return False
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def _stale_context(self) -> bool:
        from .tlsclient import client_context

        return client_context(self.ca, self.cert) is not self._context

    def close(self) -> None:
        """Close the kept connection, if any (the next request opens a new one)."""
        with self._lock:
            self._drop()

    def abort(self) -> None:
        """End a request in flight from another thread (its caller gets an error)
        and drop the connection; unlike :meth:`close`, never waits."""
        conn = self._active or self._conn
        self._aborted = conn  # what it raises is Dropped, not sent again
        sock = conn.sock if conn is not None else None
        if sock is not None:
            import socket

            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    @property
    def is_open(self) -> bool:
        return self._conn is not None and self._conn.sock is not None

    # -- a request ----------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        *,
        timeout: float = 10.0,
    ) -> Answer:
        """Send one request and read the whole answer. Raises ``OSError`` (refused,
        reset, timed out) or ``http.client.HTTPException`` (a cut or garbled answer);
        the connection is dropped after either. Requests on a kept connection take
        turns; without keep-alive each has its own and they run side by side."""
        if not self.keep_alive:
            return self._request(method, path, body, headers, timeout)
        with self._lock:
            return self._request(method, path, body, headers, timeout)

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: dict[str, str] | None,
        timeout: float,
    ) -> Answer:
        try:
            return self._attempt(method, path, body, headers, timeout)
        except _Resend:
            return self._attempt(method, path, body, headers, timeout, resent=True)

    def _attempt(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: dict[str, str] | None,
        timeout: float,
        resent: bool = False,
    ) -> Answer:
        """One try; raises :class:`_Resend` when a kept connection was closed under
        a request that may be sent again (once: not when ``resent``)."""
        started = time.perf_counter()
        new = False
        resumed = False
        connect = 0.0
        answer: Answer | None = None
        error: BaseException | None = None
        written: float | None = None  # when the request was written
        heard = False  # its answer's status line read
        try:
            conn = self._conn
            if conn is not None and self.scheme == "https" and self._stale_context():
                self._drop()  # a renewed (or dropped) client certificate: a new handshake
                conn = None
            if conn is not None and not self._usable(conn):
                self._drop()
                conn = None
            if conn is None:
                opening = time.perf_counter()
                conn = self._open(timeout)
                connect = time.perf_counter() - opening
                new = True
                if self.keep_alive:
                    self._conn = conn
            elif conn.sock is not None:
                conn.sock.settimeout(timeout)
            sent = dict(headers or {})
            if not self.keep_alive:
                sent["Connection"] = "close"
            self._active = conn
            try:
                conn.request(method, self.prefix + path, body=body, headers=sent)
                written = time.perf_counter()
                resp = conn.getresponse()
                heard = True
                if new:
                    resumed = self._keep_session(conn)
                data = resp.read()
            except BaseException as exc:
                if new and self.sessions is not None and getattr(conn, "offered", None):
                    self.sessions.drop(self.origin)  # the next connection: a full handshake
                if conn is self._conn:
                    self._drop()
                else:
                    conn.close()
                if conn is self._aborted:
                    if isinstance(exc, (OSError, http.client.HTTPException)):
                        raise Dropped(exc, aborted=True) from exc
                elif not new and not heard and isinstance(exc, _CLOSED):
                    # a kept connection the server ended: not about this request
                    crossed = written is None or (
                        method in IDEMPOTENT and time.perf_counter() - written < RESEND_WITHIN
                    )
                    if crossed and not resent:
                        raise _Resend from exc
                    raise Dropped(exc) from exc
                raise
            finally:
                if self._active is conn:
                    self._active = None
            answer = Answer(resp.status, resp.headers, data)
            if not self.keep_alive or resp.will_close:
                if conn is self._conn:
                    self._drop()
                else:
                    conn.close()
            return answer
        except BaseException as exc:
            error = exc
            raise
        finally:
            if self.observer is not None:
                self.observer(
                    Exchange(
                        method,
                        path,
                        answer.status if answer is not None else None,
                        time.perf_counter() - started,
                        new,
                        answer,
                        error.__cause__ if isinstance(error, _Resend) else error,
                        connect,
                        resumed,
                    )
                )


class _Resend(Exception):
    """A kept connection was closed under a request that may be sent again."""


def retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP
    date), or None when absent or unreadable. Never negative."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def describe(exc: BaseException) -> Any:
    """What went wrong, for a message: the reason of a wrapped socket error."""
    return getattr(exc, "reason", None) or exc
