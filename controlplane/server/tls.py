"""``lakeshore serve``'s TLS: the server context both listeners (the main port's
socket group and the probe port) share, and reloading its certificate.

* The context is the standard library's server defaults
  (``ssl.create_default_context(Purpose.CLIENT_AUTH)``), TLS 1.2 at least.
* :class:`Reloader` loads the certificate and key again into that same context on
  ``SIGHUP`` or when either file changes (checked every :data:`WATCH_SECONDS`):
  connections opened afterwards get the new certificate, open ones keep theirs,
  nothing restarts. A pair that does not load (a half-written file, a key of
  another certificate) is refused with a log line and the old one kept. The TLS
  edge processes (``server/edge/``) are told to load it again too (``on_reload``).
"""

from __future__ import annotations

import logging
import signal
import ssl
import threading
from pathlib import Path
from typing import Any

WATCH_SECONDS = 2.0
RENEW_WARN_DAYS = 14.0  # a certificate ending sooner is said at start and at each reload
log = logging.getLogger("lakeshore.tls")


class TlsConfigError(ValueError):
    """The certificate or key cannot be used (the sentence says which and why)."""


def _load(context: ssl.SSLContext, cert: Path, key: Path) -> None:
    def encrypted() -> bytes:  # instead of OpenSSL's prompt on the terminal
        raise TlsConfigError(
            f"{key} is encrypted: lakeshore serve takes an unencrypted key (PEM), mode "
            f"0600 (openssl pkey -in {key} -out KEY.pem)"
        )

    try:
        context.load_cert_chain(str(cert), str(key), password=encrypted)
    except FileNotFoundError as exc:
        raise TlsConfigError(f"{exc.filename or cert} does not exist") from None
    except ssl.SSLError as exc:
        raise TlsConfigError(
            f"{cert} and {key} are not a PEM certificate and its private key ({exc.reason or exc})"
        ) from None
    except OSError as exc:
        raise TlsConfigError(f"cannot read {exc.filename or cert}: {exc.strerror or exc}") from None


def dates_warning(cert: Path, soon_days: float = RENEW_WARN_DAYS) -> str | None:
    """What is wrong with the dates of ``cert``'s first certificate, said to the
    operator: it has ended (every client refuses it), it is not valid yet (a clock
    is wrong), or it ends within ``soon_days``; None when it is fine or unreadable
    (loading it says that)."""
    import datetime as dt

    from cryptography import x509

    try:
        first = x509.load_pem_x509_certificate(cert.read_bytes())
    except (OSError, ValueError):
        return None
    now = dt.datetime.now(dt.UTC)
    ends, starts = first.not_valid_after_utc, first.not_valid_before_utc
    renew = "replace the certificate and key files and send the server SIGHUP"
    if now >= ends:
        return f"{cert} ended at {ends:%Y-%m-%dT%H:%M:%SZ}: every client refuses it; {renew}"
    if now < starts:
        return (
            f"{cert} is not valid before {starts:%Y-%m-%dT%H:%M:%SZ}: clients refuse it "
            "until then (check this machine's clock)"
        )
    if ends - now < dt.timedelta(days=soon_days):
        return f"{cert} ends at {ends:%Y-%m-%dT%H:%M:%SZ}; {renew} before then"
    return None


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """The server context for ``cert`` (PEM, the chain after it) and ``key``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load(context, cert, key)
    return context


def accept_client_certs(context: ssl.SSLContext, ca_pem: bytes) -> None:
    """Ask every client for a certificate signed by the CA ``ca_pem`` without
    requiring one: a daemon presents its own (see ``identity/``), people and
    programs none. A certificate that does not verify (another CA, expired) ends
    the handshake."""
    context.load_verify_locations(cadata=ca_pem.decode())
    context.verify_mode = ssl.CERT_OPTIONAL


def _stamp(*paths: Path) -> tuple[tuple[int, int, int], ...]:
    out = []
    for path in paths:
        try:
            st = path.stat()
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((0, 0, 0))
    return tuple(out)


class Reloader:
    """Holds the live context and loads ``cert``/``key`` into it again on demand."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.cert = Path(cert)
        self.key = Path(key)
        self.context = server_context(self.cert, self.key)
        self._seen = _stamp(self.cert, self.key)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.loads = 1  # how many times a pair was loaded (the first included)
        self.client_ca: bytes | None = None  # the CA of daemons' certificates, when asked
        self.on_reload: list[Any] = []  # called after each pair loaded again (the edges)

    def accept_client_certs(self, ca_pem: bytes) -> None:
        """:func:`accept_client_certs` on the live context, remembered for the edge
        processes that serve the same context (``server/edge/``)."""
        accept_client_certs(self.context, ca_pem)
        self.client_ca = ca_pem

    def reload(self) -> bool:
        """Load the pair again when it loads (checked on a fresh context first);
        whether the live context now holds it."""
        with self._lock:
            self._seen = _stamp(self.cert, self.key)
            try:
                server_context(self.cert, self.key)  # whole and matching, or refused
                _load(self.context, self.cert, self.key)
            except TlsConfigError as exc:
                log.error("TLS certificate not reloaded, the previous one is served: %s", exc)
                return False
            self.loads += 1
        log.info("TLS certificate reloaded from %s", self.cert)
        warning = dates_warning(self.cert)
        if warning:
            log.warning("TLS certificate: %s", warning)
        for call in list(self.on_reload):
            call()
        return True

    def changed(self) -> bool:
        return _stamp(self.cert, self.key) != self._seen

    def _watch(self) -> None:
        while not self._stop.wait(WATCH_SECONDS):
            if self.changed():
                self.reload()

    def start(self) -> Reloader:
        """Watch the files, and reload on ``SIGHUP`` (when called from the main thread)."""
        self._thread = threading.Thread(target=self._watch, name="tls-reload", daemon=True)
        self._thread.start()
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGHUP"):
            signal.signal(signal.SIGHUP, self._on_hup)
        return self

    def _on_hup(self, signum: int, frame: Any) -> None:
        threading.Thread(target=self.reload, name="tls-reload-hup", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
