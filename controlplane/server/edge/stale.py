"""Whether an accepted TCP connection's client has already given up, read from the
kernel (``TCP_INFO``) before any byte of a handshake is spent on it.

* ``closed``: the client closed it while it waited in the listen queue (the
  socket is in ``CLOSE_WAIT``).
* ``waited``: its first bytes (or, with none yet, its connection) arrived longer
  ago than :data:`STALE_AFTER_MS`: a daemon's requests time out after 10 s
  (``Client.timeout``), so by the time a handshake and the request were done it
  would have given up.

Either is closed at once with a reset (nothing lingers), and counted.
"""

from __future__ import annotations

import contextlib
import socket
import struct

STALE_AFTER_MS = 8000
"""A connection whose first bytes waited longer than this (ms) is refused unshaken."""
REASONS = ("closed", "waited")
TCP_INFO = getattr(socket, "TCP_INFO", 11)
CLOSE_WAIT = 8  # tcpi_state
_LAST_DATA_RECV = 52  # offset of tcpi_last_data_recv (ms) in struct tcp_info
_SIZE = 104
_LINGER_NOW = struct.pack("ii", 1, 0)


def why_stale(sock: socket.socket, bound_ms: int = STALE_AFTER_MS) -> str | None:
    """``closed``, ``waited`` or None (serve it); None too where the kernel says nothing."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, _SIZE)
    except OSError:
        return None
    if len(info) < _LAST_DATA_RECV + 4:
        return None
    if info[0] == CLOSE_WAIT:
        return "closed"
    (quiet,) = struct.unpack_from("I", info, _LAST_DATA_RECV)
    return "waited" if quiet > bound_ms else None


def refuse(sock: socket.socket) -> None:
    """Close ``sock`` with a reset: its client learns at once, no state lingers."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_NOW)
    sock.close()
