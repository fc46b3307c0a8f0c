"""How every client of the control plane trusts its server (standard library only:
the daemon imports it on a host's own ``python3``).

An ``https://`` control plane is always verified: its certificate must chain to the
system's trust store, or to the CA certificate named by ``ca`` (``LAKESHORE_CA``,
``.dreamrc`` ``lakeshore.ca``, or a daemon's ``--ca``), and name the host the URL
names. Nothing here turns verification off. TLS 1.2 is the oldest spoken.

What goes wrong is said as a :class:`TrustProblem`: its sentence names the server
and the CA in use, its ``advice`` what to do (``LAKESHORE_CA`` to the CA certificate
``lakeshore serve`` printed). :func:`explain` turns the errors of a failed request
into one, or into a sentence for plain HTTP sent to a TLS port.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

CA_ENV = "LAKESHORE_CA"
"""The environment variable naming a CA certificate (PEM) clients trust."""
CA_ADVICE = (
    "set LAKESHORE_CA (or .dreamrc lakeshore.ca) to the CA certificate lakeshore "
    "serve printed at start (<data dir>/tls/ca.crt), or give the server a certificate "
    "the system trusts"
)

_lock = threading.Lock()
_contexts: dict[tuple[str | None, int, int, str | None, int, int], ssl.SSLContext] = {}


class TrustProblem(OSError):
    """The server could not be verified, or the CA to verify it with cannot be read."""

    def __init__(self, message: str, advice: str = CA_ADVICE, reason: str = "tls") -> None:
        super().__init__(message)
        self.message = message
        self.advice = advice
        self.reason = reason  # one of REASONS

    def __str__(self) -> str:
        return self.message


REASONS = ("unknown_ca", "name_mismatch", "expired", "ca_unreadable", "not_tls", "tls",
           "client_cert_refused")  # fmt: skip
"""Why a server was not verified: its CA is not the one trusted, its certificate
names another host, it has ended (or not begun), the CA file cannot be read, it
does not speak TLS, another TLS failure, or it refused this client's certificate."""
NAME_ADVICE = (
    "use a URL whose host the server's certificate names, or have the certificate name "
    "this one (lakeshore serve --tls-name HOST adds it to the built-in CA's)"
)
EXPIRED_ADVICE = (
    "the server's certificate has ended or is not valid yet (check both clocks): "
    "lakeshore serve renews the built-in CA's at start; your own, replace --tls-cert "
    "and --tls-key and send the server SIGHUP"
)
# OpenSSL's verify codes (X509_V_ERR_*) by what they mean here
_EXPIRED_CODES = (9, 10)
_NAME_CODES = (62, 64)
_UNKNOWN_CA_CODES = (2, 18, 19, 20, 21)


def ca_path(ca: str | os.PathLike[str] | None = None) -> str | None:
    """The CA certificate to trust: ``ca``, else ``$LAKESHORE_CA``, else None (the
    system's trust store)."""
    if ca is not None and str(ca).strip():
        return os.path.expanduser(str(ca).strip())
    env = os.environ.get(CA_ENV, "").strip()
    return os.path.expanduser(env) if env else None


def _stamp(path: str | None, what: str) -> tuple[str | None, int, int]:
    if path is None:
        return (None, 0, 0)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise TrustProblem(
            f"the {what} {path} cannot be read: {exc.strerror or exc}", reason="ca_unreadable"
        ) from None
    return (path, st.st_size, st.st_mtime_ns)


def client_context(
    ca: str | os.PathLike[str] | None = None, cert: str | None = None
) -> ssl.SSLContext:
    """A verifying client context: the system's trust store, or only the CA of
    :func:`ca_path`; with ``cert`` (a PEM file holding a certificate and its key:
    a daemon's identity) presenting it to the server. Raises :class:`TrustProblem`
    when a file cannot be read as what it should be. Kept per file (its size and
    time), so a request does not read the trust store again, and a renewed
    certificate makes a new context."""
    import ssl  # with an https URL only: a plain client never pays for it

    path = ca_path(ca)
    key = _stamp(path, "CA certificate") + _stamp(cert, "client certificate")
    with _lock:
        got = _contexts.get(key)
        if got is not None:
            return got
    try:
        context = ssl.create_default_context(cafile=path)
    except (OSError, ValueError) as exc:
        raise TrustProblem(
            f"the CA certificate {path} is not a PEM certificate: {getattr(exc, 'reason', None) or exc}",
            reason="ca_unreadable",
        ) from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert is not None:
        try:
            context.load_cert_chain(cert)
        except (OSError, ssl.SSLError) as exc:
            raise TrustProblem(
                f"the client certificate {cert} cannot be loaded: "
                f"{getattr(exc, 'reason', None) or exc}",
                "remove it: the daemon asks for a new one with its bootstrap token "
                "(dreamlake provider connect hands the host a new token)",
            ) from None
    with _lock:
        _contexts[key] = context
    return context


def explain(exc: BaseException, url: str, ca: str | None = None) -> TrustProblem | None:
    """A :class:`TrustProblem` for what a failed request to ``url`` raised when it
    is about TLS (an untrusted certificate, a server that does not speak TLS, a TLS
    port asked in plain HTTP); None for anything else."""
    import ssl

    if isinstance(exc, TrustProblem):
        return exc
    trusted = f"the CA in {ca_path(ca)}" if ca_path(ca) else "the system's trust store"
    if isinstance(exc, ssl.SSLCertVerificationError):
        why = exc.verify_message or exc.reason or str(exc)
        code = exc.verify_code
        message = (
            f"lakeshore at {url} presents a certificate that {trusted} does not verify ({why})"
        )
        if code in _NAME_CODES:
            return TrustProblem(message, NAME_ADVICE, "name_mismatch")
        if code in _EXPIRED_CODES:
            return TrustProblem(message, EXPIRED_ADVICE, "expired")
        return TrustProblem(
            message, CA_ADVICE, "unknown_ca" if code in _UNKNOWN_CA_CODES else "tls"
        )
    if isinstance(exc, ssl.SSLError):
        reason = str(getattr(exc, "reason", "") or exc)
        if "WRONG_VERSION_NUMBER" in reason.upper() or "RECORD_LAYER" in reason.upper():
            return TrustProblem(
                f"lakeshore at {url} does not answer in TLS ({reason}): it serves plain HTTP",
                "use the server's http:// URL only on this machine's loopback; off it, "
                "start lakeshore serve without --insecure-http",
                "not_tls",
            )
        return TrustProblem(f"TLS with lakeshore at {url} failed ({reason})")
    return None


def plain_to_tls_hint(exc: BaseException, url: str) -> str | None:
    """For an ``http://`` URL whose server closed the connection without answering
    (what a TLS port does with plain HTTP): a sentence saying so."""
    import http.client

    if not url.startswith("http://"):
        return None
    closed = (http.client.RemoteDisconnected, http.client.BadStatusLine, ConnectionResetError)
    if isinstance(exc, closed):
        return (
            f"lakeshore at {url} closed the connection without an answer: a server "
            "serving HTTPS does that to plain HTTP; use its https:// URL"
        )
    return None


CERT_ADVICE = (
    "the daemon asks for a new certificate with a bootstrap token: run dreamlake "
    "provider connect again to hand the host one"
)


def refused_cert_hint(exc: BaseException, url: str, cert: str | None) -> TrustProblem | None:
    """For a client that presented ``cert`` to an ``https`` server that closed a
    new connection right after its handshake, before any answer: a sentence saying
    the server does not accept the certificate. That is what a server does with a
    certificate of another CA or one that has ended (under TLS 1.3 after the
    handshake, most often with no alert: the first read finds the connection
    closed), or what a TLS alert says. A kept connection the server closed (its
    keep-alive timeout, a restart) is not that: the connection raises
    ``connection.Dropped`` for it, which is none of these, so no hint is made."""
    import http.client
    import ssl

    if cert is None or not url.startswith("https://"):
        return None
    closed = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
              ssl.SSLEOFError)  # fmt: skip
    alert = isinstance(exc, ssl.SSLError) and "ALERT" in str(getattr(exc, "reason", "")).upper()
    if type(exc) in closed or alert:
        return TrustProblem(
            f"lakeshore at {url} ended the connection after the TLS handshake: it does "
            f"not accept the client certificate {cert} (signed by another CA, ended, or "
            "not yet valid)",
            CERT_ADVICE,
            "client_cert_refused",
        )
    return None


def answers_without_cert(url: str, ca: str | None = None, timeout: float = 5.0) -> bool:
    """Whether the ``https`` server at ``url`` answers a connection that presents
    no client certificate (any status: ``/healthz``). After a new connection that
    presented one was closed unanswered, yes means the server is up and refused
    that certificate; no means it is going away or restarting, whatever the
    certificate."""
    import http.client
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        return False
    try:
        context = client_context(ca)
        conn = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout, context=context
        )
        try:
            conn.request(
                "GET", parts.path.rstrip("/") + "/healthz", headers={"Connection": "close"}
            )
            conn.getresponse().read()
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return False
    return True
