"""A daemon's client certificate forwarded by a TLS-terminating proxy in a header.

Behind a proxy that ends TLS (docs/deploy.md, way 3) the daemon's certificate ends
at the proxy. ``lakeshore serve --client-cert-header NAME --trusted-proxy CIDR``
takes it from a header instead, as nginx (``$ssl_client_escaped_cert``) and AWS
ALB's mutual-TLS passthrough (``X-Amzn-Mtls-Clientcert``) pass it on: the PEM
certificate, URL-escaped; or as Envoy does (``x-forwarded-client-cert``, XFCC):
the ``Cert`` of the element its nearest proxy added (:mod:`.xfcc` says which and
why), refused when that element has none.

* Only a request whose TCP peer (the connection itself, never a forwarding header)
  is in a trusted network may present one. The header from any other peer is
  refused, 401, whatever else the request carries: it is never trusted.
* The server verifies the certificate itself, as its TLS layer verifies one: issued
  by the built-in CA (its signature), within its dates, for client authentication.
  It does not trust the proxy to have checked.
* A certificate that verifies becomes the request's peer certificate, exactly as
  one its own TLS connection presented (:data:`~.peer.PEER_KEY` in the request's
  state): the access gate then finds its row, refuses it revoked, ended or outside
  its provider's (and instance's) routes, as for any certificate. A request that
  also carries ``Authorization`` is that token's, as over TLS.

The check runs in the connection's protocol, before the early refusal of a body
without credentials (``access/early.py``) and the app: a refusal is answered from
the headers, the body unread, and the connection closed, at that refusal's pace (a
flood's clients wait their turn). A certificate not seen before costs its
verification (about 0.35 ms of CPU for a P-256 signature), once. A server without the
option never installs it; with it, a request without the header costs one scan
of its headers. A certificate verified once is remembered (by the header's bytes,
up to :data:`REMEMBERED`): its signature is checked once, its dates every time.
"""

from __future__ import annotations

import ipaddress
import re
import time
import urllib.parse
from collections.abc import Iterable
from typing import Any

from ..errors import ApiError
from .peer import PEER_KEY
from .xfcc import XfccError, is_xfcc, nearest_cert

REMEMBERED = 20_000
"""Verified certificates remembered at most (a fleet's worth); then forgotten at once."""
HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
RESERVED = frozenset({"authorization", "host", "content-length", "transfer-encoding", "cookie"})

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class ForwardedConfigError(ValueError):
    """The option cannot be used as given (the sentence says why)."""


def networks(cidrs: Iterable[str]) -> tuple[Network, ...]:
    """The trusted networks, parsed (an address alone is its own /32 or /128)."""
    found = []
    for raw in cidrs:
        try:
            found.append(ipaddress.ip_network(raw.strip(), strict=False))
        except ValueError:
            raise ForwardedConfigError(
                f"--trusted-proxy {raw!r} is not an address or a network (CIDR, "
                "e.g. 127.0.0.1/32 or 10.0.0.0/24)"
            ) from None
    return tuple(found)


def header_name(raw: str) -> bytes:
    """The header's name as the protocol sees it (lower case), checked."""
    name = raw.strip()
    if not HEADER_NAME.match(name) or name.lower() in RESERVED:
        raise ForwardedConfigError(
            f"--client-cert-header {raw!r} is not a header name a proxy can set "
            "(letters, digits and -, not a header HTTP itself uses)"
        )
    return name.lower().encode("ascii")


def _refused(detail: str) -> ApiError:
    return ApiError(401, "unauthorized", detail)


class ForwardedCerts:
    """The option: which header, from which peers, verified against which CA."""

    def __init__(self, header: str, trusted: Iterable[str], ca_pem: bytes) -> None:
        from cryptography import x509

        self.header = header_name(header)
        self.name = header.strip()
        self.trusted = networks(trusted)
        if not self.trusted:
            raise ForwardedConfigError(
                "--client-cert-header needs --trusted-proxy: the proxies' addresses "
                "(CIDR), the only peers whose header is believed"
            )
        self.ca = x509.load_pem_x509_certificate(ca_pem)
        self._peers: dict[str, bool] = {}
        self._known: dict[bytes, tuple[int, float, float]] = {}

    def trusts(self, host: str | None) -> bool:
        """Whether a connection from ``host`` (its TCP peer's address) may present
        a certificate by the header."""
        if host is None:
            return False  # a Unix socket, or no address: nothing to trust
        known = self._peers.get(host)
        if known is None:
            try:
                address = ipaddress.ip_address(host.partition("%")[0])
            except ValueError:
                known = False
            else:
                if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
                    address = address.ipv4_mapped
                known = any(address in net for net in self.trusted)
            if len(self._peers) >= REMEMBERED:
                self._peers.clear()
            self._peers[host] = known
        return known

    def serial(self, host: str | None, raw: bytes) -> int | None:
        """The serial number of the certificate ``raw`` (the header's value) carries,
        verified; None when the value is empty (the proxy's client presented none).
        Raises :class:`~..errors.ApiError` (401) when it is refused."""
        if not self.trusts(host):
            raise _refused(
                f"the {self.name} header is only taken from a trusted proxy, and this "
                f"connection comes from {host or 'an unknown address'}: send the request "
                "through the proxy (or list the proxy with lakeshore serve --trusted-proxy)"
            )
        if not raw.strip():
            return None
        known = self._known.get(raw)
        if known is None:
            known = self._verify(raw)
            if len(self._known) >= REMEMBERED:
                self._known.clear()
            self._known[raw] = known
        serial, starts, ends = known
        now = time.time()
        if now < starts:
            raise _refused(
                f"the client certificate in {self.name} is not valid yet; check the clock"
            )
        if now > ends:
            raise _refused(
                f"the client certificate in {self.name} has expired; the daemon renews "
                "it before it ends, else run connect again for a new bootstrap token"
            )
        return serial

    def _verify(self, raw: bytes) -> tuple[int, float, float]:
        from cryptography import x509
        from cryptography.x509.oid import ExtendedKeyUsageOID

        from ..builtin_ca import issued_by

        untrusted = _refused(
            f"the client certificate in {self.name} was not issued by this server's CA; "
            "run connect again for a new bootstrap token"
        )
        value = raw.strip()
        if is_xfcc(value):  # Envoy's x-forwarded-client-cert: its nearest element's Cert
            try:
                value = nearest_cert(value)
            except XfccError as exc:
                raise _refused(f"the {self.name} header is refused: {exc}") from None
        try:
            pem = urllib.parse.unquote_to_bytes(value)
            cert = x509.load_pem_x509_certificate(pem)
        except ValueError:
            raise _refused(
                f"the {self.name} header carries no PEM certificate (the proxy passes the "
                "client's certificate URL-escaped: nginx $ssl_client_escaped_cert, or "
                "Envoy's x-forwarded-client-cert with Cert)"
            ) from None
        if not issued_by(cert, self.ca):
            raise untrusted
        try:
            usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        except x509.ExtensionNotFound:
            usage = None
        except ValueError:
            raise untrusted from None
        if usage is not None and ExtendedKeyUsageOID.CLIENT_AUTH not in usage:
            raise _refused(f"the certificate in {self.name} is not for client authentication")
        starts = cert.not_valid_before_utc.timestamp()
        ends = cert.not_valid_after_utc.timestamp()
        return cert.serial_number, starts, ends


def _reason(exc: ApiError) -> str:
    detail = str(exc.detail)
    if "expired" in detail or "not valid yet" in detail:
        return "expired"
    return "untrusted" if "CA" in detail else "other"


def forwarding(protocol: type, forwarded: ForwardedCerts, state: Any) -> type:
    """``protocol`` (uvicorn's httptools protocol class, wrapped already by the early
    refusal) taking each request's certificate from ``forwarded``'s header; see the
    module docstring."""
    if not hasattr(protocol, "_start_asgi_task"):
        raise ForwardedConfigError(
            "--client-cert-header needs uvicorn's httptools protocol (pip install httptools)"
        )
    from ..access.early import Refusals, answer
    from ..metrics.registry import certificate_refused
    from ..requestlog import request_id

    header = forwarded.header
    paced = Refusals(state)  # refusals answered at the early refusal's pace

    class ForwardedCert(protocol):  # type: ignore[misc,valid-type]
        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            scope = cycle.scope
            given = [value for key, value in scope["headers"] if key == header]
            if not given or getattr(self, "refused", False) or self.transport.is_closing():
                super()._start_asgi_task(cycle, app)  # (after a refusal: nothing served)
                return
            peer = self.client  # the TCP peer: the connection itself, not a header
            host = str(peer[0]) if peer else None
            try:
                if len(given) > 1:
                    raise _refused(f"the {forwarded.name} header is given more than once")
                serial = forwarded.serial(host, bytes(given[0]))
            except ApiError as exc:
                started = time.perf_counter()
                cycle.response_complete = True  # the body is dropped as it is parsed
                cycle.keep_alive = False
                self.refused = True
                transport, server, why = self.transport, self.server_state, exc

                def send() -> None:
                    rid = request_id(scope["headers"])
                    transport.write(answer(why, rid, server.default_headers, started))
                    transport.close()
                    metrics = getattr(state, "metrics", None)
                    if metrics is not None:
                        metrics.token_refused(why.status, why.detail)
                    certificate_refused(state, _reason(why))

                paced.answer(send, transport)
                return
            if serial is not None:
                scope["state"][PEER_KEY] = serial
            super()._start_asgi_task(cycle, app)

    ForwardedCert.__name__ = f"ForwardedCert{protocol.__name__}"
    return ForwardedCert


__all__ = ["ForwardedCerts", "ForwardedConfigError", "forwarding", "header_name", "networks"]
