"""What the ``lakeshore`` commands share to reach a server: the connection flags,
the client they make, and calling it. Imported by ``cli/lakeshore/app.py`` and by the
sub-apps it mounts (``lakeshore_fleet``, the registry commands), which never import
``cli/lakeshore/app.py`` back."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..completion import namespaces
from .common import fail, fail_from

if TYPE_CHECKING:
    from dreamlake.controlplane.client import Client

TOKEN_LIMIT = 64 * 1024  # a bearer token is a line; anything larger is the wrong file


def _why(exc: ValueError) -> str:
    from dreamlake.engine.settings.readers import FileProblem

    if isinstance(exc, FileProblem) and "UTF-8" in exc.reason:
        return "is not UTF-8 text"
    return str(getattr(exc, "reason", exc))


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
        "--namespace",
        "-N",
        envvar="LAKESHORE_NAMESPACE",
        help="Namespace (default: 'default').",
        autocompletion=namespaces,
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
    from dreamlake.engine.settings.readers import read_text
    from dreamlake.engine.world.lakeshore import DEFAULT_NAMESPACE, EMBEDDED_URL, is_loopback

    url = server or os.environ.get("LAKESHORE_URL") or EMBEDDED_URL
    token: str | None = None
    if token_file is not None:
        try:
            token = read_text(token_file.expanduser(), limit=TOKEN_LIMIT).strip()
        except OSError as exc:
            fail(f"cannot read token file {token_file}: {exc.strerror}")
        except ValueError as exc:  # not UTF-8, too large, a FIFO or a device
            fail(f"token file {token_file} {_why(exc)}", f"fix {token_file} and re-run")
    elif os.environ.get("LAKESHORE_TOKEN"):
        token = os.environ["LAKESHORE_TOKEN"].strip()
    elif os.environ.get("LAKESHORE_TOKEN_FILE"):
        path = Path(os.environ["LAKESHORE_TOKEN_FILE"]).expanduser()
        try:
            token = read_text(path, limit=TOKEN_LIMIT).strip()
        except OSError as exc:
            fail(f"cannot read LAKESHORE_TOKEN_FILE {path}: {exc.strerror}")
        except ValueError as exc:
            fail(f"LAKESHORE_TOKEN_FILE {path} {_why(exc)}", f"fix {path} and re-run")
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
        client = getattr(fn, "__self__", None)  # the refused token's next step needs it
        fail_from(exc, getattr(client, "namespace", None), getattr(client, "token", None))


def emit(data: Any, as_json: bool, prose: str) -> None:
    typer.echo(json.dumps(data, indent=2) if as_json else prose)
