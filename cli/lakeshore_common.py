"""What the `lakeshore` commands share: the connection options and the client they
build, one way to fail, and one mapping from the control plane's errors to a
message, a next step and exit code 1."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from dreamlake.controlplane.client import Client


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
            whose = f"namespace {namespace!r} (or of its org)" if namespace else "this namespace"
            hint = f"use a token of {whose}, or an admin token"
        detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        fail(f"{exc.status} {exc.error}: {detail}", hint)
    raise exc


# -- the connection options every sub-app takes -----------------------------------

ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        envvar="LAKESHORE_URL",
        help="Control plane URL (default: http://127.0.0.1:7878).",
    ),
]
TokenFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        help="File holding a bearer token (default: LAKESHORE_TOKEN / LAKESHORE_TOKEN_FILE, "
        "else the admin token under --data-dir).",
    ),
]
DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Server data directory (default: LAKESHORE_DATA_DIR, else the user data dir).",
    ),
]
NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace", "-N", envvar="LAKESHORE_NAMESPACE", help="Namespace (default: 'default')."
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def make_client(
    server: str | None = None,
    token_file: Path | None = None,
    data_dir: Path | None = None,
    namespace: str | None = None,
) -> Client:
    """A client from flags, then the environment, then the embedded default."""
    from dreamlake.controlplane.client import Client
    from dreamlake.controlplane.server.settings import ADMIN_TOKEN_FILE, default_data_dir
    from dreamlake.engine.lakeshore import DEFAULT_NAMESPACE, EMBEDDED_URL, is_loopback

    url = server or os.environ.get("LAKESHORE_URL") or EMBEDDED_URL
    token: str | None = None
    if token_file is not None:
        try:
            token = token_file.expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            fail(f"cannot read token file {token_file}: {exc.strerror}")
        except ValueError:
            fail(f"token file {token_file} is not UTF-8 text", f"fix {token_file} and re-run")
    elif os.environ.get("LAKESHORE_TOKEN"):
        token = os.environ["LAKESHORE_TOKEN"].strip()
    elif os.environ.get("LAKESHORE_TOKEN_FILE"):
        path = Path(os.environ["LAKESHORE_TOKEN_FILE"]).expanduser()
        try:
            token = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            fail(f"cannot read LAKESHORE_TOKEN_FILE {path}: {exc.strerror}")
        except ValueError:
            fail(f"LAKESHORE_TOKEN_FILE {path} is not UTF-8 text", f"fix {path} and re-run")
    elif data_dir is not None or is_loopback(url):
        # this machine's admin token goes only to this machine's server, unless
        # --data-dir names the server it belongs to
        admin = (data_dir.expanduser() if data_dir else default_data_dir()) / ADMIN_TOKEN_FILE
        if admin.is_file():
            token = admin.read_text(encoding="utf-8").strip()
    ns = namespace or os.environ.get("LAKESHORE_NAMESPACE") or DEFAULT_NAMESPACE
    return Client(url=url, token=token or None, namespace=ns)


def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a client call; turn control-plane errors into a message and exit 1."""
    from dreamlake.controlplane.client import ControlPlaneError

    try:
        return fn(*args, **kwargs)
    except ControlPlaneError as exc:
        fail_from(exc)


def emit(data: Any, as_json: bool, prose: str) -> None:
    typer.echo(json.dumps(data, indent=2) if as_json else prose)
