"""Signing a daemon's certificate request with the built-in CA.

The request only proves the daemon holds its key (its signature must verify); the
server names the certificate itself, from the token that asked:

* subject ``CN=nymph <provider>``, ``O=<namespace>``;
* a URI in the subject alternative names, ``lakeshore://<namespace>/<provider>``
  and ``/<instance>`` when the token is pinned to one (percent-quoted);
* extended key usage ``clientAuth`` only, valid :func:`lifetime` from now.

The key must be EC (P-256 or P-384) or RSA of 2048 bits or more.
"""

from __future__ import annotations

import datetime as dt
import os
import urllib.parse
from dataclasses import dataclass
from typing import Any

LIFETIME_ENV = "LAKESHORE_DAEMON_CERT_SECONDS"
LIFETIME_SECONDS = 24 * 3600
"""A daemon certificate lives a day unless ``LAKESHORE_DAEMON_CERT_SECONDS`` says
otherwise (at least 60 s); the daemon renews it when two thirds have passed."""


class CsrRefused(ValueError):
    """The request cannot be signed (the sentence says why)."""


@dataclass(frozen=True)
class Signed:
    pem: bytes
    serial: int
    not_after: dt.datetime
    uri: str


def lifetime() -> dt.timedelta:
    raw = os.environ.get(LIFETIME_ENV, "").strip()
    try:
        seconds = int(raw) if raw else LIFETIME_SECONDS
    except ValueError:
        seconds = LIFETIME_SECONDS
    return dt.timedelta(seconds=max(60, seconds))


def identity_uri(namespace: str, provider: str, instance: str | None) -> str:
    parts = [namespace, provider] + ([instance] if instance else [])
    return "lakeshore://" + "/".join(urllib.parse.quote(p, safe="") for p in parts)


def _check_key(key: Any) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if isinstance(key, ec.EllipticCurvePublicKey):
        if key.curve.name not in ("secp256r1", "secp384r1"):
            raise CsrRefused(f"an EC key on {key.curve.name}; P-256 or P-384 only")
        return
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < 2048:
            raise CsrRefused(f"an RSA key of {key.key_size} bits; 2048 or more only")
        return
    raise CsrRefused("the key is neither EC nor RSA")


def sign(
    csr_pem: str,
    ca_pem: bytes,
    ca_key: Any,
    *,
    namespace: str,
    provider: str,
    instance: str | None,
    now: dt.datetime | None = None,
) -> Signed:
    """The certificate for the key of ``csr_pem``, signed by the CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    try:
        csr = x509.load_pem_x509_csr(csr_pem.encode())
    except ValueError:
        raise CsrRefused("csr is not a PEM certificate request") from None
    if not csr.is_signature_valid:
        raise CsrRefused("the request's signature does not verify with its own key")
    public = csr.public_key()
    _check_key(public)
    ca = x509.load_pem_x509_certificate(ca_pem)
    start = now or dt.datetime.now(dt.UTC)
    not_after = min(start + lifetime(), ca.not_valid_after_utc)
    serial = x509.random_serial_number()
    uri = identity_uri(namespace, provider, instance)
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, f"nymph {provider}"[:64]),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, namespace[:64]),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.subject)
        .public_key(public)
        .serial_number(serial)
        .not_valid_before(start - dt.timedelta(minutes=5))
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri)]), critical=False
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return Signed(cert.public_bytes(serialization.Encoding.PEM), serial, not_after, uri)


class Issuer:
    """The built-in CA as this server signs with it: its certificate, and its key
    unsealed on the first certificate signed (then kept)."""

    def __init__(self, ca_pem: bytes, unseal: Any) -> None:
        import threading

        self.ca_pem = ca_pem
        self._unseal = unseal
        self._key: Any = None
        self._lock = threading.Lock()

    def key(self) -> Any:
        with self._lock:
            if self._key is None:
                self._key = self._unseal()
            return self._key
