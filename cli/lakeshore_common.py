"""What the `lakeshore` commands share: one way to fail, and one mapping from the
control plane's errors to a message, a next step and exit code 1."""

from __future__ import annotations

import json
from typing import NoReturn

import typer


def fail(message: str, next_action: str | None = None, code: int = 1) -> NoReturn:
    """Exit ``code`` with the message and the next step: in prose on stderr, and with
    ``--json`` also as one JSON document on stdout (an agent reads that one)."""
    import sys

    typer.echo(f"error: {message}", err=True)
    if next_action:
        typer.echo(f"next: {next_action}", err=True)
    if "--json" in sys.argv[1:]:
        doc = {"error": message, "nextAction": next_action}
        typer.echo(json.dumps(doc, indent=2, sort_keys=True))
    raise typer.Exit(code)


def fail_from(exc: Exception, namespace: str | None = None) -> NoReturn:
    """Exit 1 for a control-plane error (Unreachable / ApiFailure); re-raise others."""
    from dreamlake.controlplane.client import ApiFailure, Unreachable

    if isinstance(exc, Unreachable):
        fail(exc.message, "lakeshore serve   # or pass --server URL / set LAKESHORE_URL")
    if isinstance(exc, ApiFailure):
        hint = None
        if exc.status == 401:
            hint = (
                "pass --token-file with a valid token or set LAKESHORE_TOKEN "
                "(the admin token is under --data-dir)"
            )
        elif exc.status == 403:
            whose = (
                f"namespace {namespace!r} (or of its org, to read)"
                if namespace
                else "this namespace"
            )
            hint = f"use a token of {whose}, or an admin token"
        detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        fail(f"{exc.status} {exc.error}: {detail}", hint)
    raise exc
