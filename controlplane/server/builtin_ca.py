"""The built-in CA ``lakeshore serve`` makes when it listens off loopback without a
certificate of its own.

* The CA (an EC P-256 key, ten years) is made once and shared by every replica
  through the database (``server_meta`` rows :data:`CA_CERT_ROW` and
  :data:`CA_KEY_ROW`; the key encrypted with the secret key, as secrets are, its
  key id beside it). The first replica to start makes it; one that loses the race
  takes the winner's.
  ``lakeshore keys rotate`` seals it again with the new key (:func:`reseal`).
* Under ``<data dir>/tls/``: ``ca.crt`` (public: what clients trust, through
  ``LAKESHORE_CA``), ``server.crt`` and ``server.key`` (0600), the certificate this
  replica serves, signed by the CA for the names and addresses it serves, valid
  :data:`SERVER_DAYS` days, made again at start when a name is missing or less
  than :data:`RENEW_DAYS` days are left.

Files are written atomically (a temporary file, then a rename).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CA_CERT_ROW = "tls_ca_cert"
CA_KEY_ROW = "tls_ca_key"
CA_DAYS = 3650
SERVER_DAYS = 397
RENEW_DAYS = 30
FOLDER = "tls"
_AAD = ("", "tls-ca-key")  # (namespace, name) the encrypted key is bound to
WILDCARDS = ("0.0.0.0", "::", "")


class BuiltinCaError(RuntimeError):
    """The shared CA cannot be read (its key does not decrypt with this server's)."""


@dataclass(frozen=True)
class Issued:
    ca_cert: Path
    cert: Path
    key: Path
    fingerprint: str  # SHA-256 of the CA certificate, AA:BB:… as browsers show it
    names: tuple[str, ...]


def served_names(host: str, extra: Iterable[str] = ()) -> list[str]:
    """The names and addresses a server bound to ``host`` is reached by: ``host``
    (every address of this machine for a wildcard), the machine's name, loopback,
    and ``extra`` (``--tls-name``)."""
    names: list[str] = []

    def add(name: str) -> None:
        name = name.strip().strip("[]")
        if name and name not in WILDCARDS and name not in names:
            names.append(name)

    add(host)
    for name in extra:
        add(name)
    hostname = socket.gethostname()
    add(hostname)
    if host in WILDCARDS:  # the name DNS gives this machine, and every address here
        from .local_addresses import local_addresses

        add(socket.getfqdn())
        for address in local_addresses():
            if not ipaddress.ip_address(address.split("%")[0]).is_loopback:
                add(address)  # (loopback's come last, below)
    for name in ("localhost", "127.0.0.1", "::1"):
        add(name)
    return names


def _san(names: Iterable[str]) -> Any:
    from cryptography import x509

    entries: list[Any] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name.split("%")[0])))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _write(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def make_ca(common_name: str = "lakeshore CA") -> tuple[bytes, Any]:
    """A new CA: its certificate (PEM) and private key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    from cryptography.hazmat.primitives.serialization import Encoding

    return cert.public_bytes(Encoding.PEM), key


def issue_server(
    ca_pem: bytes, ca_key: Any, names: list[str], days: int = SERVER_DAYS
) -> tuple[bytes, bytes]:
    """A server certificate for ``names`` signed by the CA: (certificate PEM, key PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca = x509.load_pem_x509_certificate(ca_pem)
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0][:64])]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_san(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def fingerprint(cert_pem: bytes) -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    raw = x509.load_pem_x509_certificate(cert_pem).fingerprint(hashes.SHA256())
    return ":".join(f"{b:02X}" for b in raw)


def _key_pem(key: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def shared_ca(make_session: Any, box: Any) -> tuple[bytes, Callable[[], Any]]:
    """The CA every replica over this database shares (made here when none is yet):
    its certificate, and how to unseal its key (only when a certificate is issued,
    so a server whose certificate is current never needs the key)."""
    from sqlalchemy.exc import IntegrityError

    from ..models import ServerMeta

    with make_session() as session:
        cert_row = session.get(ServerMeta, CA_CERT_ROW)
        key_row = session.get(ServerMeta, CA_KEY_ROW)
        if cert_row is None or key_row is None:
            ca_pem, ca_key = make_ca()
            sealed = {
                "keyId": box.key_id,
                "token": box.encrypt(_key_pem(ca_key), namespace=_AAD[0], name=_AAD[1]),
            }
            session.add(ServerMeta(key=CA_CERT_ROW, value=ca_pem.decode()))
            session.add(ServerMeta(key=CA_KEY_ROW, value=json.dumps(sealed)))
            try:
                session.commit()
                return ca_pem, lambda: ca_key
            except IntegrityError:  # another replica made it first: take that one
                session.rollback()
                cert_row = session.get(ServerMeta, CA_CERT_ROW)
                key_row = session.get(ServerMeta, CA_KEY_ROW)
        assert cert_row is not None and key_row is not None
        ca_text, key_text = cert_row.value, key_row.value
    return ca_text.encode(), lambda: _unseal(key_text, box)


def _unseal(key_text: str, box: Any) -> Any:
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    from ..registry.crypto import SecretDecryptError

    sealed = json.loads(key_text)
    try:
        pem = box.decrypt(
            sealed["token"], namespace=_AAD[0], name=_AAD[1], key_id=sealed.get("keyId")
        )
    except SecretDecryptError:
        raise BuiltinCaError(
            f"the built-in CA's key in the database was sealed with secret key id "
            f"{sealed.get('keyId')}, which this server does not hold"
        ) from None
    return load_pem_private_key(pem.encode(), password=None)


def reseal(session: Any, old_box: Any, new_box: Any) -> bool:
    """In a key rotation's transaction: seal the built-in CA's key with the new
    secret key (it is a secret like the others). Whether there was one to reseal;
    a key that does not open with the old box is left as it is."""
    from ..models import ServerMeta
    from ..registry.crypto import SecretDecryptError

    row = session.get(ServerMeta, CA_KEY_ROW, with_for_update=True)
    if row is None:
        return False
    sealed = json.loads(row.value)
    try:
        pem = old_box.decrypt(
            sealed["token"], namespace=_AAD[0], name=_AAD[1], key_id=sealed.get("keyId")
        )
    except SecretDecryptError:
        return False
    token = new_box.encrypt(pem, namespace=_AAD[0], name=_AAD[1])
    row.value = json.dumps({"keyId": new_box.key_id, "token": token})
    return True


def issued_by(cert: Any, ca: Any) -> bool:
    """Whether certificate ``ca`` issued ``cert`` directly (its name and signature)."""
    from cryptography.exceptions import InvalidSignature

    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _current(cert_path: Path, ca_pem: bytes, names: list[str]) -> bool:
    """Whether the server certificate on disk is the CA's, names every one of
    ``names`` and has more than RENEW_DAYS left."""
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    except (OSError, ValueError):
        return False
    if not issued_by(cert, x509.load_pem_x509_certificate(ca_pem)):
        return False
    if cert.not_valid_after_utc - _now() < dt.timedelta(days=RENEW_DAYS):
        return False
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    have = {str(v) for v in san.get_values_for_type(x509.DNSName)}
    have |= {str(v) for v in san.get_values_for_type(x509.IPAddress)}
    wanted = set()
    for name in names:
        try:
            wanted.add(str(ipaddress.ip_address(name.split("%")[0])))
        except ValueError:
            wanted.add(name)
    return wanted <= have


def ensure(data_dir: Path, names: list[str], make_session: Any, box: Any) -> Issued:
    """The CA certificate and this replica's server certificate under
    ``<data_dir>/tls/``, made or renewed as needed."""
    folder = Path(data_dir) / FOLDER
    ca_pem, unseal = shared_ca(make_session, box)
    ca_path, cert_path, key_path = folder / "ca.crt", folder / "server.crt", folder / "server.key"
    if not ca_path.is_file() or ca_path.read_bytes() != ca_pem:
        _write(ca_path, ca_pem, 0o644)
    if not (key_path.is_file() and _current(cert_path, ca_pem, names)):
        cert_pem, key_pem = issue_server(ca_pem, unseal(), names)
        _write(key_path, key_pem, 0o600)
        _write(cert_path, cert_pem, 0o644)
    return Issued(ca_path, cert_path, key_path, fingerprint(ca_pem), tuple(names))
