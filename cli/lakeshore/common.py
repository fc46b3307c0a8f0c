"""What the `lakeshore` commands share: one way to fail, and one mapping from the
control plane's errors to a message, a next step and exit code 1."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import typer


def error_doc(message: str, kind: str, next_step: str | None) -> dict[str, object]:
    """The one JSON error shape of both commands (and, as problem+json members, of
    the HTTP API): ``error`` (a sentence), ``kind`` (a stable word), ``nextAction``
    (``{"kind": "run", "command": ...}`` when the next step is a command, else null,
    with the advice in ``hint``)."""
    doc: dict[str, object] = {"error": message, "kind": kind, "nextAction": None}
    if next_step and next_step.startswith(
        ("lakeshore ", "dreamlake ", "LAKESHORE_CA=", "LAKESHORE_URL=")
    ):
        doc["nextAction"] = {"kind": "run", "command": next_step}
    elif next_step:
        doc["hint"] = next_step
    return doc


def fail(
    message: str, next_action: str | None = None, code: int = 1, kind: str = "error"
) -> NoReturn:
    """Exit ``code`` with the message and the next step: in prose on stderr, and with
    ``--json`` also as one JSON document on stdout (an agent reads that one)."""
    import sys

    typer.echo(f"error: {message}", err=True)
    if next_action:
        typer.echo(f"next: {next_action}", err=True)
    if "--json" in sys.argv[1:]:
        typer.echo(json.dumps(error_doc(message, kind, next_action), indent=2, sort_keys=True))
    raise typer.Exit(code)


USAGE_EXIT = 1
"""The exit code of a usage error (an unknown command, a bad or missing flag): the
same as ``dreamlake``'s, and as every other failure of the command's job."""


def usage_error(exc: Exception, argv: list[str]) -> int:
    """Click's usage error as the one error shape: ``error: ...`` and ``next: <the
    command's --help>`` on stderr and, with ``--json``, the JSON document (kind
    ``usage``) on stdout. Returns :data:`USAGE_EXIT`."""
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or "lakeshore"
    message = getattr(exc, "format_message", lambda: str(exc))()
    typer.echo(f"error: {message}", err=True)
    typer.echo(f"next: {path} --help", err=True)
    if "--json" in argv:
        typer.echo(
            json.dumps(error_doc(message, "usage", f"{path} --help"), indent=2, sort_keys=True)
        )
    return USAGE_EXIT


def tls_next_step(exc: Any) -> str:
    """The command that fixes a TLS failure: the same command with ``LAKESHORE_CA``
    naming the server's CA (its file under this data dir when it is there) for a CA
    that does not verify it or cannot be read, with the ``https://`` URL for plain
    HTTP sent to a TLS port, with the ``http://`` URL for TLS sent to a plain server
    on this machine; ``lakeshore serve --tls-name HOST`` on the server for a name its
    certificate lacks, ``lakeshore serve`` (a restart renews the built-in CA's
    certificate) for one that has ended, or without ``--insecure-http`` for a plain
    server elsewhere; else the advice in words."""
    import shlex
    import sys
    import urllib.parse

    from dreamlake.engine.settings.http_json import is_loopback

    reason = getattr(exc, "reason", "")
    again = "lakeshore " + shlex.join(sys.argv[1:])
    if reason in ("unknown_ca", "ca_unreadable"):
        here = _ca_guess()
        if here is not None:
            return f"LAKESHORE_CA={shlex.quote(here)} {again}"
        return (  # a command still, with the file to copy here said beside it
            f"LAKESHORE_CA=ca.crt {again}   # ca.crt: a copy of the CA certificate "
            "lakeshore serve printed at start (<data dir>/tls/ca.crt on the server)"
        )
    url = getattr(exc, "url", None) or ""
    host = urllib.parse.urlsplit(url).hostname or "HOST"
    if reason == "plain_to_tls" and url.startswith("http://"):
        return _with_url("https://" + url[len("http://") :])
    if reason == "not_tls" and url.startswith("https://"):
        plain = "http://" + url[len("https://") :]
        if is_loopback(url):
            return _with_url(plain)
        return (
            f"lakeshore serve --host {host}   # on the server, without --insecure-http: "
            f"off loopback it serves HTTPS (or, on a network nobody else reads, use {plain})"
        )
    if reason == "name_mismatch":
        return f"lakeshore serve --tls-name {host}   # on the server; {exc.advice}"
    if reason == "expired":
        return f"lakeshore serve   # on the server, restarted; {exc.advice}"
    return str(exc.advice)


def _with_url(url: str) -> str:
    """This command again, reaching ``url``: its ``--server`` replaced when it has
    one, else with ``LAKESHORE_URL`` set."""
    import shlex
    import sys

    from .rerun import command, with_option

    argv = with_option("--server", url)
    if argv is not None:
        return command(argv)
    return f"LAKESHORE_URL={shlex.quote(url)} {command(sys.argv[1:])}"


def _ca_guess() -> str | None:
    """The built-in CA's certificate under this machine's data dir when it is there."""
    from .rerun import data_dir

    path = data_dir() / "tls" / "ca.crt"
    return str(path) if path.is_file() else None


def fail_from(exc: Exception, namespace: str | None = None, sent: str | None = None) -> NoReturn:
    """Exit 1 for a control-plane error (Unreachable / ApiFailure); re-raise others.
    ``sent`` is the token the request carried: a refused token's next command
    depends on it (``cli/lakeshore/token_next.py``)."""
    from dreamlake.controlplane.client import ApiFailure, Unreachable, Untrusted

    if isinstance(exc, Untrusted):
        fail(exc.message, tls_next_step(exc), kind="lakeshore_untrusted")
    if isinstance(exc, Unreachable):
        fail(
            exc.message,
            "lakeshore serve   # or pass --server URL / set LAKESHORE_URL",
            kind="no_lakeshore",
        )
    if isinstance(exc, ApiFailure):
        step = None
        if exc.status in (401, 403):
            from .token_next import token_next_step

            step = token_next_step(exc.status, exc.detail, namespace, sent)
        detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        fail(f"{exc.status} {exc.error}: {detail}", step, kind=str(exc.error or "lakeshore"))
    raise exc
