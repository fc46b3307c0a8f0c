"""The CA certificate(s) a launched daemon verifies this server with: what an
instance's user-data, an SSH install and a SLURM job carry beside the daemon
(``ca.crt``, public).

* the built-in CA's certificate, when the server serves one of its certificates
  (``state.serving_ca_pem``, set by ``lakeshore serve``);
* with the operator's own certificate (``--tls-cert``): the CA bundle named by
  ``lakeshore serve --tls-ca`` (``state.serving_ca_file``), read at each launch so
  a replaced file is carried from then on; without it, the self-signed
  certificates at the end of the ``--tls-cert`` chain (a private root the chain
  file includes), read at each launch as the server reloads the file;
* otherwise nothing: the host's trust store verifies the server (a public CA).

:func:`check` refuses, at start, a ``--tls-ca`` that does not verify the certificate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..server.builtin_ca import issued_by

BEGIN = "-----BEGIN CERTIFICATE-----"


class ServingCaError(ValueError):
    """``--tls-ca`` cannot be used (the sentence says why)."""


def _certs(pem: str) -> list[Any]:
    from cryptography import x509

    return list(x509.load_pem_x509_certificates(pem.encode())) if BEGIN in pem else []


def _pem(certs: list[Any]) -> str:
    from cryptography.hazmat.primitives import serialization

    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def chain_roots(cert_pem: str) -> str:
    """The self-signed certificates of a served chain (PEM), or "" when it has none."""
    try:
        certs = _certs(cert_pem)
    except ValueError:
        return ""
    return _pem([c for c in certs[1:] if issued_by(c, c)])


def _read(path: Any) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def for_launch(state: Any) -> str:
    """The PEM a launched daemon verifies this server with ("" : its trust store);
    :class:`ServingCaError` when the ``--tls-ca`` file cannot be read now."""
    builtin = getattr(state, "serving_ca_pem", None)
    if builtin:
        return str(builtin)
    named = getattr(state, "serving_ca_file", None)
    if named is not None:
        pem = _read(named)
        if BEGIN not in pem:  # a daemon handed none would not verify this server
            raise ServingCaError(
                f"--tls-ca {named} cannot be read as a PEM certificate now; put the CA "
                "certificate back (it is read at each launch)"
            )
        return pem
    served = getattr(state, "serving_cert_file", None)
    if served is not None:
        return chain_roots(_read(served))
    return ""


def check(cert_file: Path, ca_file: Path) -> None:
    """``ca_file`` holds PEM certificates and one of them verifies the chain of
    ``cert_file`` (it is a certificate of the chain, or issued its last one)."""
    try:
        cas = _certs(ca_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ServingCaError(
            f"--tls-ca {ca_file} cannot be read as PEM certificates: {exc}"
        ) from None
    if not cas:
        raise ServingCaError(f"--tls-ca {ca_file} holds no PEM certificate")
    try:
        chain = _certs(cert_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ServingCaError(f"--tls-cert {cert_file} cannot be read: {exc}") from None
    if not chain:
        raise ServingCaError(f"--tls-cert {cert_file} holds no PEM certificate")
    last = chain[-1]
    for ca in cas:
        if ca in chain:
            return
        if issued_by(last, ca):
            return
    raise ServingCaError(
        f"no certificate of --tls-ca {ca_file} issued the certificate of --tls-cert "
        f"{cert_file} (its chain ends with one issued by {last.issuer.rfc4514_string()})"
    )
