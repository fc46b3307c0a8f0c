"""The daemon's identity over TLS: a client certificate asked for with a bootstrap
token, presented on every connection, renewed before it ends.

Files, in the daemon's certificate folder (``--cert-dir``, by default the token
file's folder):

``daemon.pem`` (0600)
    the certificate and, after it, its private key: made here
    (:mod:`.keypair`), never sent anywhere. One file, replaced by a rename, so a
    connection never loads a key with another key's certificate.
``daemon.json``
    what the server said of it: serial, ``notAfter``, when it was issued.

:meth:`Credentials.step` runs before each register, poll and heartbeat and costs a
clock read unless something is due (the moments are :mod:`.certwindow`'s):

* no certificate (or one that has ended): ask for one with the token (a bootstrap
  token is spent by it; a daemon token from before certificates works too);
* two thirds of its life passed: ask for the next with the current certificate
  (the held long-poll keeps its connection; the next request shakes hands anew;
  the server ends the old certificate a few minutes later, well after that poll);
* a server that signs none (plain HTTP behind a proxy: 409; a token that may not
  ask: 403; a server from before certificates: 404): bearer token, as before;
* a certificate refused (401: revoked) is dropped, and one asked for again;
* refused (401) when the certificate has ended and the token is spent or expired:
  the log says so, with the fix (``dreamlake provider connect`` hands the host a
  new bootstrap token), and it keeps trying, reading the token file again.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from ..client import ApiFailure
from . import certwindow
from .keypair import KeyPair

PEM_NAME = "daemon.pem"
META_NAME = "daemon.json"
_LOG = logging.getLogger("nymph")


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Credentials:
    """See the module docstring."""

    def __init__(
        self,
        folder: Path,
        namespace: str,
        provider: str,
        token_loader: Callable[[], str | None],
        instance: str | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.pem = self.folder / PEM_NAME
        self.meta = self.folder / META_NAME
        self.namespace = namespace
        self.provider = provider
        self.instance = instance  # the instance it registers as (a launched one's binds it)
        self.token_loader = token_loader
        self.bearer_only = False  # the server signs none: bearer tokens, as before
        self._said_refused = False

    # -- what is on disk --------------------------------------------------------------

    def _window(self) -> tuple[float, float] | None:
        """(issued, not after) of the certificate on disk, as epoch seconds."""
        try:
            meta = json.loads(self.meta.read_text(encoding="utf-8"))
            if not self.pem.is_file():
                return None
            return float(meta["issuedAt"]), _epoch(str(meta["notAfter"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def valid(self, now: float | None = None) -> bool:
        window = self._window()
        current = time.time() if now is None else now
        return window is not None and current < certwindow.usable_until(*window)

    def due(self, now: float | None = None) -> bool:
        """Whether a certificate must be asked for now (none, ended, or renewal due)."""
        if self.bearer_only:
            return False
        window = self._window()
        current = time.time() if now is None else now
        if window is None or current >= certwindow.usable_until(*window):
            return True
        return current >= certwindow.renew_from(*window)

    def refused(self) -> None:
        """The server refused the certificate (401: revoked, or the provider's
        daemons were): drop it, so the next step asks for one with the token."""
        for path in (self.pem, self.meta):
            path.unlink(missing_ok=True)
        _LOG.warning("the control plane refused this daemon's certificate; asking for a new one")

    # -- the clients --------------------------------------------------------------------

    def apply(self, *clients: Any) -> None:
        """Have ``clients`` present the certificate (no bearer token) when it is
        valid, else the token."""
        if not self.bearer_only and self.valid():
            for client in clients:
                client.cert, client.token = str(self.pem), None
            return
        token = self.token_loader()
        for client in clients:
            client.cert = None
            if token:
                client.token = token

    def step(self, client: Any, *others: Any) -> None:
        """Ask for a certificate when one is due (see the module docstring); raises
        what the request raised, for the caller's backoff."""
        if not self.due():
            return
        self.apply(client, *others)
        renewing = client.cert is not None
        pair = KeyPair()
        path = f"/api/namespaces/{self.namespace}/daemon-certs"
        try:
            csr = pair.csr_pem(f"nymph {self.provider}")
            body = {"csr": csr, "provider": self.provider}
            if self.instance:
                body["instance"] = self.instance
            out = client.request("POST", path, body)
        except ApiFailure as exc:
            if exc.status in (403, 404, 409):
                self.bearer_only = True
                _LOG.info(
                    "no client certificate (%s %s: %s); authenticating with the bearer token",
                    exc.status,
                    exc.error,
                    exc.detail,
                )
                self.apply(client, *others)
                return
            if exc.status == 401 and not self._said_refused:
                self._said_refused = True
                _LOG.error(
                    "this host's certificate %s and its bootstrap token was refused (%s); run "
                    "`dreamlake provider connect` again to hand it a new bootstrap token (a "
                    "launched instance: terminate it and launch again)",
                    "has ended" if self._window() else "is missing",
                    exc.detail,
                )
            raise
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write(self.pem, str(out["certificate"]).encode() + pair.key_pem(), 0o600)
        meta = {
            "serial": out.get("serial"),
            "notAfter": out.get("notAfter"),
            "identity": out.get("identity"),
            "issuedAt": time.time(),
        }
        _write(self.meta, json.dumps(meta, indent=2).encode() + b"\n", 0o644)
        self._said_refused = False
        _LOG.info(
            "%s client certificate %s for %s, valid until %s",
            "renewed the" if renewing else "got a",
            out.get("serial"),
            out.get("identity"),
            out.get("notAfter"),
        )
        self.apply(client, *others)
