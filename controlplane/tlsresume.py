"""TLS session resumption for the control plane's clients (standard library only:
the daemon imports it on a host's own ``python3``).

A new connection to a server this client has spoken TLS with offers the last
session it got there, so the server may resume it instead of making a full
handshake: with a client certificate that saves the server most of its
handshake's CPU (verifying the client's chain again) and the client its own
share. A resumed session carries the client certificate it was made with, so the
server knows the connection's certificate exactly as after a full handshake; it
still checks that certificate on every request (revoked, ended, outside its
provider's routes), so resuming changes nothing of what a daemon may do.

:class:`Sessions` holds the last session per server origin (``host:port``) with
the TLS context it was made with. A session is offered only with that same
context, so a renewed client certificate (a new context, see
``tlsclient.client_context``) drops it and the next connection makes a full
handshake with the new certificate. A server that does not resume an offered
session (restarted, another process on the port, the session too old) makes a
full handshake and its new session replaces the old; a connection that fails
while offering one drops it. Under TLS 1.3 a session's ticket arrives after the
handshake, so :meth:`Sessions.keep` is called once the connection's first answer
has been read.

:class:`ResumingHTTPSConnection` is ``http.client.HTTPSConnection`` that offers a
session when it connects (``HTTPSConnection.connect`` offers none).
"""

from __future__ import annotations

import http.client
import threading
from typing import Any

__all__ = ["ResumingHTTPSConnection", "Sessions"]


def _resumable(session: Any) -> bool:
    """Whether ``session`` can be offered: it has a ticket (TLS 1.3, and 1.2 with
    tickets) or a session id the server keeps (TLS 1.2)."""
    if session is None:
        return False
    return bool(getattr(session, "has_ticket", False) or getattr(session, "id", b""))


class Sessions:
    """The last TLS session per server origin; see the module docstring. Shared by
    the clients of one identity (a daemon's poll and heartbeat clients), safe to
    use from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[Any, Any]] = {}  # origin -> (context, session)

    def offer(self, origin: str, context: Any) -> Any:
        """The session to offer a new connection to ``origin`` made with
        ``context``, or None. One made with another context (a renewed or dropped
        client certificate) is dropped."""
        with self._lock:
            held = self._held.get(origin)
            if held is None:
                return None
            if held[0] is not context:
                del self._held[origin]
                return None
            return held[1]

    def keep(self, origin: str, context: Any, session: Any, offered: Any, resumed: bool) -> None:
        """After a new connection's first answer: keep its ``session`` for the next
        one; when the ``offered`` one was not resumed and no new one came, drop it."""
        with self._lock:
            if _resumable(session):
                self._held[origin] = (context, session)
            elif offered is not None and not resumed:
                held = self._held.get(origin)
                if held is not None and held[1] is offered:
                    del self._held[origin]

    def drop(self, origin: str) -> None:
        """Forget ``origin``'s session (a connection offering it failed)."""
        with self._lock:
            self._held.pop(origin, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)


class ResumingHTTPSConnection(http.client.HTTPSConnection):
    """``http.client.HTTPSConnection`` that offers ``session`` (from
    :meth:`Sessions.offer`, or None) in its handshake; ``tls_socket`` is the TLS
    socket once connected (kept after ``close``, which a ``Connection: close``
    answer calls before its body is read, so its session can still be taken)."""

    def __init__(
        self,
        host: str,
        port: int | None,
        *,
        context: Any,
        session: Any = None,
        timeout: float | None = None,
        source_address: tuple[str, int] | None = None,
    ) -> None:
        super().__init__(
            host, port, timeout=timeout, source_address=source_address, context=context
        )
        self.tls_context = context
        self.offered = session
        self.tls_socket: Any = None

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)  # TCP (no tunnel is ever set here)
        self.sock = self.tls_context.wrap_socket(
            self.sock, server_hostname=self.host, session=self.offered
        )
        self.tls_socket = self.sock

    @property
    def resumed(self) -> bool:
        """Whether the server resumed the offered session."""
        return bool(self.tls_socket is not None and self.tls_socket.session_reused)
