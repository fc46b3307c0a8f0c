"""The client certificate a TLS connection presented, carried to each request.

The server's TLS context asks every client for a certificate and does not require
one (``CERT_OPTIONAL``, see :func:`~..tls.accept_client_certs`): a daemon presents
the one the built-in CA issued it, people and programs present none and send a
bearer token as before. A certificate that does not verify (another CA, expired)
ends the handshake; one that does is known to the protocol of its connection only.
:func:`with_peer_cert` makes uvicorn's protocol put it into the state every
request of that connection starts with (``scope["state"]``, which uvicorn copies
from the connection's ``app_state`` for each request), under :data:`PEER_KEY`: it
is bound to the connection itself, never to anything a request could say (an
address behind a forwarding header). Behind the TLS edge processes
(``server/edge/``) the certificate comes in the relayed connection's preamble
instead, and :func:`record_peer` puts it in the same place.

:func:`peer_digest` is what the gate looks up for a request without a bearer
token: ``x509:<serial in hex>``, the ``token_hash`` of the certificate's row in
``tokens`` (see routes.py). A bearer token's hash is 64 hex digits, so no token
can ever hash to it.
"""

from __future__ import annotations

from typing import Any

KNOWN_AT_MOST = 20_000
"""Serial numbers remembered by certificate (DER) at most (a fleet's worth)."""
PEER_KEY = "lakeshore.peer_serial"
DIGEST_PREFIX = "x509:"


def serial_digest(serial: int) -> str:
    """The ``tokens.token_hash`` of the certificate with this serial number."""
    return f"{DIGEST_PREFIX}{serial:x}"


def _serial(transport: Any) -> int | None:
    get = getattr(transport, "get_extra_info", None)
    cert = get("peercert") if get is not None else None
    if not cert:  # no certificate, or (never here: CERT_OPTIONAL) one not verified
        return None
    try:
        return int(str(cert.get("serialNumber", "")), 16)
    except ValueError:
        return None


_serials: dict[bytes, int] = {}


def serial_of_der(der: bytes | None) -> int | None:
    """The serial number of the certificate ``der`` (one a TLS handshake verified,
    relayed by an edge process, ``server/edge/``); None for none."""
    if not der:
        return None
    serial = _serials.get(der)
    if serial is None:
        from cryptography import x509

        try:
            serial = x509.load_der_x509_certificate(der).serial_number
        except ValueError:
            return None
        if len(_serials) >= KNOWN_AT_MOST:
            _serials.clear()
        _serials[der] = serial
    return serial


def record_peer(protocol: Any, serial: int | None) -> None:
    """Put ``serial`` (the connection's verified client certificate's) into the state
    every request of ``protocol``'s connection starts with."""
    if serial is not None:
        state: dict[str, Any] = getattr(protocol, "app_state", {})
        protocol.app_state = {**state, PEER_KEY: serial}


def with_peer_cert(protocol: type) -> type:
    """``protocol`` (uvicorn's HTTP protocol class) that records the verified
    client certificate's serial number of each connection in the state of its
    requests. ``connection_made`` runs once the TLS handshake is done."""

    class PeerCertProtocol(protocol):  # type: ignore[misc,valid-type]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            record_peer(self, _serial(transport))

    PeerCertProtocol.__name__ = f"PeerCert{protocol.__name__}"
    return PeerCertProtocol


def peer_digest(scope: dict[str, Any]) -> str | None:
    """The certificate row's hash for a request whose connection presented a
    verified client certificate; None otherwise."""
    state = scope.get("state")
    serial = state.get(PEER_KEY) if isinstance(state, dict) else None
    return serial_digest(serial) if isinstance(serial, int) else None
