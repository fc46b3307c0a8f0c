"""What an edge tells the server first on each relayed connection: the client's
address, the address it connected to, and its verified certificate (DER) or none.

    b"LKE1" | length of the rest (4 bytes, big-endian) | the rest

The rest: the client's host (2-byte length, UTF-8) and port (2 bytes), the local
host and port the same way, then the certificate's DER (4-byte length, 0: none).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

MAGIC = b"LKE1"
HEAD = struct.Struct("!4sI")
LIMIT = 64 * 1024
"""A preamble longer than this is refused (a certificate is a few hundred bytes)."""


class WireError(ValueError):
    """Bytes that are not an edge's preamble."""


class Preamble(NamedTuple):
    peer: tuple[str, int]
    local: tuple[str, int]
    cert: bytes | None  # the client's certificate, DER, verified by the edge's handshake


def _host(value: str) -> bytes:
    raw = value.encode()
    return struct.pack("!H", len(raw)) + raw


def encode(peer: tuple[str, int], local: tuple[str, int], cert: bytes | None) -> bytes:
    body = b"".join(
        (
            _host(peer[0]),
            struct.pack("!H", peer[1]),
            _host(local[0]),
            struct.pack("!H", local[1]),
            struct.pack("!I", len(cert or b"")),
            cert or b"",
        )
    )
    return HEAD.pack(MAGIC, len(body)) + body


def needed(buffer: bytes | bytearray) -> int:
    """How many bytes of ``buffer`` the whole preamble takes (0: not known yet)."""
    if len(buffer) < HEAD.size:
        return 0
    magic, size = HEAD.unpack_from(buffer)
    if magic != MAGIC or size > LIMIT:
        raise WireError("not an edge's preamble")
    return HEAD.size + size


def decode(data: bytes | bytearray) -> Preamble:
    """The preamble at the start of ``data`` (as long as :func:`needed` says)."""
    try:
        at = HEAD.size
        (n,) = struct.unpack_from("!H", data, at)
        peer_host = bytes(data[at + 2 : at + 2 + n]).decode()
        at += 2 + n
        (peer_port, n) = struct.unpack_from("!HH", data, at)
        local_host = bytes(data[at + 4 : at + 4 + n]).decode()
        at += 4 + n
        (local_port, size) = struct.unpack_from("!HI", data, at)
        at += 6
        cert = bytes(data[at : at + size]) if size else None
    except (struct.error, UnicodeDecodeError):
        raise WireError("not an edge's preamble") from None
    if cert is not None and len(cert) != size:
        raise WireError("an edge's preamble cut short")
    return Preamble((peer_host, peer_port), (local_host, local_port), cert)
