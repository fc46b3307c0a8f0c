"""The server's side of a relayed connection: read the edge's preamble, then serve
the connection as if it were the TLS connection itself.

:func:`relayed` wraps uvicorn's protocol class for the Unix socket the edges relay
to. A connection from any process but one of the server's own edges
(``SO_PEERCRED``) is closed unread. Once the preamble (:mod:`.wire`) is read, the
protocol's own ``connection_made`` runs, and the connection is given what uvicorn
would have read from a TLS transport: the client's address (``client``), the
address it connected to (``server``), ``https``, and the client certificate's
serial number in each request's state (:func:`~..identity.peer.record_peer`, as
:func:`~..identity.peer.with_peer_cert` does), so the gate, the early refusal and
a proxy's forwarded certificate see exactly what they see over TLS.
"""

from __future__ import annotations

import logging
import socket
import struct
from typing import Any

from ..identity.peer import record_peer, serial_of_der
from . import wire

log = logging.getLogger("lakeshore.serve")
_CRED = struct.Struct("3i")


def peer_pid(transport: Any) -> int | None:
    sock = transport.get_extra_info("socket")
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
    except (AttributeError, OSError):
        return None
    return int(_CRED.unpack(raw)[0])


def relayed(protocol: type, edges: Any) -> type:
    """``protocol`` reading an edge's preamble first; ``edges`` says which process
    ids are edges (``is_edge``)."""

    class Relayed(protocol):  # type: ignore[misc,valid-type]
        _relayed = False
        _preamble: bytearray | None = None
        _relay: Any = None

        def connection_made(self, transport: Any) -> None:
            pid = peer_pid(transport)
            if pid is None or not edges.is_edge(pid):
                log.warning("refused a relayed connection from process %s, not an edge", pid)
                transport.abort()
                return
            self._relay = transport
            self._preamble = bytearray()

        def data_received(self, data: bytes) -> None:
            if self._relayed:
                super().data_received(data)
                return
            buffer = self._preamble
            if buffer is None:
                return
            buffer += data
            try:
                size = wire.needed(buffer)
                if not size or len(buffer) < size:
                    return
                said = wire.decode(buffer)
            except wire.WireError:
                self._preamble = None
                self._relay.abort()
                return
            rest = bytes(buffer[size:])
            self._preamble = None
            self._relayed = True
            super().connection_made(self._relay)
            self.client = said.peer
            self.server = said.local
            self.scheme = "https"
            record_peer(self, serial_of_der(said.cert))
            if rest:
                super().data_received(rest)

        def eof_received(self) -> Any:
            if self._relayed:
                return super().eof_received()
            return None

        def connection_lost(self, exc: Exception | None) -> None:
            if self._relayed:
                super().connection_lost(exc)

    Relayed.__name__ = f"Relayed{protocol.__name__}"
    return Relayed
