"""``lakeshore secrets``: add (from a file, an environment variable or stdin), list,
remove. Values go to the server and never come back."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .common import fail

if TYPE_CHECKING:
    pass

from .registry_common import (
    DataDirOpt,
    JsonOpt,
    NamespaceOpt,
    ServerOpt,
    TokenFileOpt,
    _call,
    _client,
    _emit,
)

secrets_app = typer.Typer(
    help='Secrets, encrypted at rest; kwargs reference them as {"$secret": NAME}.',
    no_args_is_help=True,
)


# --- secrets -----------------------------------------------------------------


@secrets_app.command("add")
def secrets_add(
    name: Annotated[str, typer.Argument(help="Secret name.")],
    kind: Annotated[
        str,
        typer.Option(
            "--kind", help="generic, aws_keypair (<id>:<secret>), ssh_key, token, password."
        ),
    ] = "generic",
    value: Annotated[
        str | None,
        typer.Option("--value", help="The value (visible in the process list: prefer the others)."),
    ] = None,
    value_file: Annotated[
        Path | None, typer.Option("--value-file", help="Read the value from a file.")
    ] = None,
    value_env: Annotated[
        str | None,
        typer.Option("--value-env", help="Read the value from this environment variable."),
    ] = None,
    value_stdin: Annotated[
        bool, typer.Option("--value-stdin", help="Read the value from stdin.")
    ] = False,
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite an existing secret.")
    ] = False,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store a secret (encrypted at rest). The value is never printed back."""
    sources = [s for s in (value is not None, value_file, value_env, value_stdin) if s]
    if len(sources) != 1:
        fail(
            "give the value exactly one way: --value-file, --value-env, --value-stdin or --value",
            f"lakeshore secrets add {name} --value-file ./{name}.secret",
        )
    if value_file is not None:
        try:
            secret = value_file.expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            fail(f"cannot read --value-file {value_file}: {exc.strerror or exc}")
        secret = secret.rstrip("\r\n")
    elif value_env:
        if value_env not in os.environ:
            fail(f"environment variable {value_env} is not set")
        secret = os.environ[value_env]
    elif value_stdin:
        secret = sys.stdin.read().rstrip("\r\n")
    else:
        secret = value or ""
    client = _client(server, namespace, token_file, data_dir)
    body = {"kind": kind, "value": secret}
    if replace:
        row = _call(client, "PUT", "secrets", name, body=body)
    else:
        row = _call(client, "POST", "secrets", body={"name": name, **body})
    _emit(
        row,
        as_json,
        f'stored secret {row["name"]} ({row["kind"]}); reference it as {{"$secret": "{row["name"]}"}}',
    )


@secrets_app.command("list")
def secrets_list(
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List secret names and kinds (never values)."""
    from dreamlake.controlplane.registry.render import secrets_table

    client = _client(server, namespace, token_file, data_dir)
    rows = _call(client, "GET", "secrets")
    _emit(rows, as_json, secrets_table(rows) if rows else "(no secrets)")


@secrets_app.command("remove")
def secrets_remove(
    name: Annotated[str, typer.Argument(help="Secret name.")],
    force: Annotated[
        bool, typer.Option("--force", help="Remove even when providers reference it.")
    ] = False,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete a secret (refused while a provider references it, unless --force)."""
    client = _client(server, namespace, token_file, data_dir)
    row = _call(client, "DELETE", "secrets", name, query={"force": "true"} if force else None)
    _emit(row, as_json, f"removed secret {row['name']}")
