"""How ``lakeshore serve`` listens: HTTPS with the operator's certificate, HTTPS
with the built-in CA's, or plain HTTP (loopback, or ``--insecure-http``).

* ``--tls-cert`` and ``--tls-key``: HTTPS with them, on any host.
* Neither, on loopback: plain HTTP, as always (nothing crosses a network).
* Neither, off loopback: HTTPS with a certificate from the built-in CA
  (``controlplane/server/builtin_ca.py``); its fingerprint and certificate's path
  are printed, for clients' ``LAKESHORE_CA``.
* ``--insecure-http`` off loopback: plain HTTP, said at start and in ``/readyz``.

Serving HTTPS, the server also asks clients for a certificate of the built-in CA
(a daemon's identity) and signs daemons' requests for one. With
``--client-cert-header`` (behind a TLS-terminating proxy) it signs them too, on
plain HTTP as well, and takes a daemon's certificate from a trusted proxy's header
(``controlplane/server/identity/forwarded.py``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer

from .common import fail

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serving_tls(
    application: Any,
    settings: Any,
    host: str,
    cert: Path | None,
    key: Path | None,
    names: list[str],
    insecure_http: bool,
    ca: Path | None = None,
) -> Any:
    """The :class:`~dreamlake.controlplane.server.tls.Reloader` to serve with, or
    None for plain HTTP; says which on stderr."""
    from dreamlake.controlplane.server.tls import Reloader, TlsConfigError

    if cert is not None and key is not None:
        try:
            reloader = Reloader(cert.expanduser(), key.expanduser())
        except TlsConfigError as exc:
            fail(str(exc), "lakeshore serve --tls-cert CERT.pem --tls-key KEY.pem")
        typer.echo(f"TLS: serving {cert} (reloaded on SIGHUP or when it changes)", err=True)
        from dreamlake.controlplane.server.tls import dates_warning

        warning = dates_warning(cert.expanduser())
        if warning:
            typer.echo(f"warning: TLS: {warning}", err=True)
        _own_ca(application, cert.expanduser(), ca.expanduser() if ca is not None else None)
        return _daemon_certs(application, reloader)
    if host in LOOPBACK:
        return None
    if insecure_http:
        application.state.insecure_http = True
        typer.echo(
            f"warning: --insecure-http: serving plain HTTP on {host}; bearer tokens and "
            "the daemon bundle cross the network in clear text",
            err=True,
        )
        return None
    from dreamlake.controlplane.server import builtin_ca

    try:
        issued = builtin_ca.ensure(
            settings.data_dir,
            builtin_ca.served_names(host, names),
            application.state.sessionmaker,
            application.state.registry_secret_box,
        )
        reloader = Reloader(issued.cert, issued.key)
    except (builtin_ca.BuiltinCaError, TlsConfigError, OSError) as exc:
        fail(
            f"cannot set up the built-in CA: {exc}",
            "lakeshore serve --tls-cert CERT.pem --tls-key KEY.pem   # or fix the secret key",
        )
    typer.echo(
        f"TLS: built-in CA, SHA-256 fingerprint {issued.fingerprint}\n"
        f"TLS: clients trust it with LAKESHORE_CA={issued.ca_cert}\n"
        f"TLS: serving a certificate for {', '.join(issued.names)}",
        err=True,
    )
    # what a launched instance's user-data carries, to verify this server with
    application.state.serving_ca_pem = issued.ca_cert.read_text()
    return _daemon_certs(application, reloader)


def _own_ca(application: Any, cert: Path, ca: Path | None) -> None:
    """What a launched daemon verifies the operator's certificate with: ``--tls-ca``
    (checked against the certificate now), else the chain's own root, if it has one
    (``controlplane/launch/serving_ca.py``)."""
    from dreamlake.controlplane.launch import serving_ca

    application.state.serving_cert_file = cert
    if ca is None:
        return
    try:
        serving_ca.check(cert, ca)
    except serving_ca.ServingCaError as exc:
        fail(str(exc), "lakeshore serve --tls-cert CERT.pem --tls-key KEY.pem --tls-ca CA.pem")
    application.state.serving_ca_file = ca
    typer.echo(f"TLS: launched daemons verify this server with {ca}", err=True)


def _daemon_certs(application: Any, reloader: Any) -> Any:
    """Daemons authenticate by a certificate of the built-in CA (shared through the
    database, made now when there is none): the server asks for one, and signs
    them (``controlplane/server/identity/``)."""
    from dreamlake.controlplane.server import builtin_ca
    from dreamlake.controlplane.server.identity.issue import Issuer

    ca_pem, unseal = builtin_ca.shared_ca(
        application.state.sessionmaker, application.state.registry_secret_box
    )
    reloader.accept_client_certs(ca_pem)
    application.state.client_ca = Issuer(ca_pem, unseal)
    return reloader


def check_forwarded(header: str | None, trusted: list[str]) -> None:
    """Refuse ``--client-cert-header`` / ``--trusted-proxy`` given wrong, before the
    server is built."""
    from dreamlake.controlplane.server.identity.forwarded import (
        ForwardedConfigError,
        header_name,
        networks,
    )

    example = (
        "lakeshore serve --client-cert-header X-SSL-Client-Cert --trusted-proxy 127.0.0.1/32"
        if header is not None
        else "lakeshore serve --trusted-proxy 10.0.0.0/24   # the proxies' addresses"
    )
    if header is not None and not trusted:
        fail(
            "--client-cert-header needs --trusted-proxy: the proxies' addresses (CIDR), "
            "the only peers whose header is believed",
            example,
        )
    try:
        if header is not None:
            header_name(header)
        networks(trusted)
    except ForwardedConfigError as exc:
        fail(str(exc), example)


def forwarded_headers(trusted: list[str]) -> None:
    """Say at start which peers' ``X-Forwarded-Proto`` / ``X-Forwarded-For`` are
    taken, where ``--trusted-proxy`` adds any to this machine's own."""
    if not trusted:
        return
    from dreamlake.controlplane.server.fleet.serving import LOOPBACK, forwarded_from

    typer.echo(
        "behind a proxy: X-Forwarded-Proto and X-Forwarded-For are taken from "
        f"{', '.join(forwarded_from(trusted)[len(LOOPBACK) :])} and this machine only",
        err=True,
    )


def forwarded_certs(
    application: Any, data_dir: Path, header: str | None, trusted: list[str]
) -> None:
    """``--client-cert-header`` and ``--trusted-proxy``: daemons' certificates from a
    trusted proxy's header, verified against the built-in CA, which signs them (made
    now when there is none, also when serving plain HTTP); the CA's certificate is
    written to ``<data dir>/tls/client-ca.crt`` for the proxy to verify them with."""
    if header is None:
        return
    from dreamlake.controlplane.server import builtin_ca
    from dreamlake.controlplane.server.identity.forwarded import (
        ForwardedCerts,
        ForwardedConfigError,
    )
    from dreamlake.controlplane.server.identity.issue import Issuer

    issuer = getattr(application.state, "client_ca", None)
    if issuer is None:
        try:
            ca_pem, unseal = builtin_ca.shared_ca(
                application.state.sessionmaker, application.state.registry_secret_box
            )
        except (builtin_ca.BuiltinCaError, OSError) as exc:
            fail(f"cannot set up the built-in CA: {exc}", "fix the secret key")
        issuer = application.state.client_ca = Issuer(ca_pem, unseal)
    try:
        forwarded = ForwardedCerts(header, trusted, issuer.ca_pem)
    except ForwardedConfigError as exc:
        fail(
            str(exc),
            "lakeshore serve --client-cert-header X-SSL-Client-Cert --trusted-proxy 127.0.0.1/32",
        )
    folder = data_dir / "tls"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "client-ca.crt"
    partial = folder / f".client-ca.crt.{os.getpid()}"
    partial.write_bytes(issuer.ca_pem)
    partial.replace(path)
    application.state.forwarded_certs = forwarded
    typer.echo(
        f"TLS: daemons' certificates also come in the {forwarded.name} header from "
        f"{', '.join(str(n) for n in forwarded.trusted)} (only); the proxy verifies them "
        f"with {path}",
        err=True,
    )
