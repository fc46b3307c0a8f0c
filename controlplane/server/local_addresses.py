"""The addresses of this machine's interfaces: what a server bound to a wildcard
(``0.0.0.0``, ``::``) is reached by, for the built-in CA's server certificate.

Read from the kernel on Linux (``/proc/net/fib_trie``: every local IPv4 address,
secondary ones included; ``/proc/net/if_inet6``: every IPv6 address but link-local
ones, which a URL names only with a zone, and temporary or deprecated ones, which
nobody connects to and which would change the certificate's names at each start); elsewhere, or when those cannot be read,
the addresses the machine's name resolves to. Never raises.
"""

from __future__ import annotations

import ipaddress
import socket

FIB_TRIE = "/proc/net/fib_trie"
IF_INET6 = "/proc/net/if_inet6"
_LINK_SCOPE = 0x20
_NOT_SERVED = 0x01 | 0x20  # IFA_F_TEMPORARY (privacy, outgoing only), IFA_F_DEPRECATED


def _ipv4(text: str) -> list[str]:
    """The local (``/32 host LOCAL``) addresses of a ``fib_trie`` listing."""
    found: list[str] = []
    last = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|-- "):
            last = stripped[4:].strip()
        elif stripped == "/32 host LOCAL" and last is not None and last not in found:
            found.append(last)
    return found


def _ipv6(text: str) -> list[str]:
    """The addresses of an ``if_inet6`` listing, link-local ones left out."""
    found: list[str] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        try:
            address = ipaddress.IPv6Address(bytes.fromhex(fields[0]))
            scope = int(fields[3], 16)
            flags = int(fields[4], 16) if len(fields) > 4 else 0
        except ValueError:
            continue
        if scope & 0xF0 == _LINK_SCOPE or address.is_link_local or flags & _NOT_SERVED:
            continue
        if str(address) not in found:
            found.append(str(address))
    return found


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read(1 << 20)
    except OSError:
        return None


def _resolved() -> list[str]:
    found: list[str] = []
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None):
            address = str(info[4][0])
            if address not in found:
                found.append(address)
    except OSError:
        pass
    return found


def local_addresses() -> list[str]:
    """Every address of this machine's interfaces (loopback included), then the
    ones its name resolves to."""
    found: list[str] = []
    trie, inet6 = _read(FIB_TRIE), _read(IF_INET6)
    for address in [
        *(_ipv4(trie) if trie else []),
        *(_ipv6(inet6) if inet6 else []),
        *_resolved(),
    ]:
        if address not in found:
            found.append(address)
    return found


__all__ = ["local_addresses"]
