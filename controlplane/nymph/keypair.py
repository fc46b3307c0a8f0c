"""The daemon's key pair and its certificate request, made on the host with the
standard library alone (the daemon runs on a host's own ``python3``, which has no
way to make a key): an ECDSA P-256 key, written as a PEM ``EC PRIVATE KEY`` that
``ssl`` loads, and a PKCS #10 request signed with it (the proof that the daemon
holds the key the certificate will name). The key never leaves the host.

The arithmetic is the curve's textbook affine formulas with Python's big integers
and the signature's nonce is drawn from :mod:`secrets`; it runs once per
certificate (at enrolment and at each renewal), well under a second.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Optional

# NIST P-256 (secp256r1)
P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
A = P - 3
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
G = (
    0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
    0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
)
Point = Optional[tuple[int, int]]  # noqa: UP045 (a host's python3 may be 3.9)

OID_EC_PUBLIC_KEY = "1.2.840.10045.2.1"
OID_P256 = "1.2.840.10045.3.1.7"
OID_ECDSA_SHA256 = "1.2.840.10045.4.3.2"
OID_COMMON_NAME = "2.5.4.3"


def _add(p1: Point, p2: Point) -> Point:
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    (x1, y1), (x2, y2) = p1, p2
    if x1 == x2 and (y1 + y2) % P == 0:
        return None
    if p1 == p2:
        slope = (3 * x1 * x1 + A) * pow(2 * y1, -1, P) % P
    else:
        slope = (y2 - y1) * pow(x2 - x1, -1, P) % P
    x3 = (slope * slope - x1 - x2) % P
    return x3, (slope * (x1 - x3) - y1) % P


def _mul(k: int, point: Point) -> Point:
    out: Point = None
    addend = point
    while k:
        if k & 1:
            out = _add(out, addend)
        addend = _add(addend, addend)
        k >>= 1
    return out


# -- DER ---------------------------------------------------------------------------


def _len(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def _tlv(tag: int, body: bytes) -> bytes:
    return bytes([tag]) + _len(len(body)) + body


def _seq(*items: bytes) -> bytes:
    return _tlv(0x30, b"".join(items))


def _int(value: int) -> bytes:
    raw = value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big")  # a leading 0 bit
    return _tlv(0x02, raw)


def _oid(dotted: str) -> bytes:
    parts = [int(p) for p in dotted.split(".")]
    body = bytearray([40 * parts[0] + parts[1]])
    for part in parts[2:]:
        chunk = [part & 0x7F]
        part >>= 7
        while part:
            chunk.append(0x80 | (part & 0x7F))
            part >>= 7
        body += bytes(reversed(chunk))
    return _tlv(0x06, bytes(body))


def _bits(raw: bytes) -> bytes:
    return _tlv(0x03, b"\x00" + raw)


def _pem(label: str, der: bytes) -> str:
    text = base64.encodebytes(der).decode().replace("\n", "")
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"


# -- the key and the request ---------------------------------------------------------


class KeyPair:
    """A P-256 key made here: :meth:`key_pem` (for ``ssl``) and :meth:`csr_pem`."""

    def __init__(self, secret: int | None = None) -> None:
        self.secret = secret if secret is not None else 1 + secrets.randbelow(N - 1)
        public = _mul(self.secret, G)
        assert public is not None
        self.public = public

    def _point(self) -> bytes:
        x, y = self.public
        return b"\x04" + x.to_bytes(32, "big") + y.to_bytes(32, "big")

    def key_pem(self) -> bytes:
        """The key as SEC 1 ``EC PRIVATE KEY`` PEM (what ``load_cert_chain`` reads)."""
        der = _seq(
            _int(1),
            _tlv(0x04, self.secret.to_bytes(32, "big")),
            _tlv(0xA0, _oid(OID_P256)),
            _tlv(0xA1, _bits(self._point())),
        )
        return _pem("EC PRIVATE KEY", der).encode()

    def sign(self, data: bytes) -> bytes:
        """ECDSA with SHA-256 over ``data``: the DER ``Ecdsa-Sig-Value``."""
        z = int.from_bytes(hashlib.sha256(data).digest(), "big")
        while True:
            k = 1 + secrets.randbelow(N - 1)
            point = _mul(k, G)
            assert point is not None
            r = point[0] % N
            if r == 0:
                continue
            s = pow(k, -1, N) * (z + r * self.secret) % N
            if s:
                return _seq(_int(r), _int(s))

    def csr_pem(self, common_name: str) -> str:
        """A PKCS #10 request for this key, signed by it (the server takes only the
        key from it, and names the certificate itself)."""
        name = _seq(_tlv(0x31, _seq(_oid(OID_COMMON_NAME), _tlv(0x0C, common_name.encode()))))
        spki = _seq(_seq(_oid(OID_EC_PUBLIC_KEY), _oid(OID_P256)), _bits(self._point()))
        info = _seq(_int(0), name, spki, _tlv(0xA0, b""))
        request = _seq(info, _seq(_oid(OID_ECDSA_SHA256)), _bits(self.sign(info)))
        return _pem("CERTIFICATE REQUEST", request)
