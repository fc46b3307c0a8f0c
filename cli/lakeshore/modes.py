"""``lakeshore modes``: stored RunConfigs, and the launch-time merge preview."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from .common import fail

if TYPE_CHECKING:
    pass

from .registry_common import (
    DataDirOpt,
    FieldOpt,
    JsonOpt,
    NamespaceOpt,
    ServerOpt,
    TokenFileOpt,
    _call,
    _client,
    _emit,
    _patch,
)

modes_app = typer.Typer(help="Modes: stored RunConfigs that name a provider.", no_args_is_help=True)


# --- modes -------------------------------------------------------------------


@modes_app.command("add")
def modes_add(
    name: Annotated[str, typer.Argument(help="Mode name (^[a-z0-9][a-z0-9-]*$).")],
    field: FieldOpt = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store a RunConfig. Recognised: backend runner image tags resources env timeout_s provider;
    any other field is kept too."""
    fields = _patch(field, "--field")
    client = _client(server, namespace, token_file, data_dir)
    row = _call(client, "POST", "modes", body={"name": name, **fields})
    _emit(row, as_json, f"added mode {row['name']} (provider {row.get('provider') or '-'})")


@modes_app.command("update")
def modes_update(
    name: Annotated[str, typer.Argument(help="Mode name.")],
    field: FieldOpt = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a mode: --field deep-merges, KEY=null deletes."""
    fields = _patch(field, "--field")
    if not fields:
        fail("nothing to update", f"lakeshore modes update {name} --field KEY=VALUE")
    client = _client(server, namespace, token_file, data_dir)
    row = _call(client, "PATCH", "modes", name, body=fields)
    _emit(row, as_json, f"updated mode {row['name']}")


@modes_app.command("list")
def modes_list(
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List modes."""
    from dreamlake.controlplane.registry.render import modes_table

    client = _client(server, namespace, token_file, data_dir)
    rows = _call(client, "GET", "modes")
    _emit(rows, as_json, modes_table(rows) if rows else "(no modes)")


@modes_app.command("show")
def modes_show(
    name: Annotated[str, typer.Argument(help="Mode name.")],
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one mode."""
    from dreamlake.controlplane.registry.render import mode_detail

    client = _client(server, namespace, token_file, data_dir)
    row = _call(client, "GET", "modes", name)
    _emit(row, as_json, mode_detail(row))


@modes_app.command("remove")
def modes_remove(
    name: Annotated[str, typer.Argument(help="Mode name.")],
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete a mode."""
    client = _client(server, namespace, token_file, data_dir)
    row = _call(client, "DELETE", "modes", name)
    _emit(row, as_json, f"removed mode {row['name']}")


@modes_app.command("preview")
def modes_preview(
    mode: Annotated[str | None, typer.Argument(help="Mode name (optional).")] = None,
    provider: Annotated[
        str | None, typer.Option("--provider", help="Provider name (overrides the mode's).")
    ] = None,
    field: FieldOpt = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The launch-time merge: provider kwargs + the RunConfig's, secrets still as markers."""
    from dreamlake.controlplane.registry.render import flatten, leaf_text

    body: dict[str, Any] = {}
    if mode:
        body["mode"] = mode
    if provider:
        body["provider"] = provider
    fields = _patch(field, "--field")
    if fields:
        body["runConfig"] = fields
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "POST", "launch", "preview", body=body)
    lines = [
        f"provider {out['provider']} ({out['launcher']}, dispatch {out['dispatch']}) in {out['namespace']}",
        "launcher kwargs:",
        *(f"  {k} = {leaf_text(v)}" for k, v in flatten(out["kwargs"])),
        "instance tags:",
        *(f"  {k} = {v}" for k, v in out["tags"].items()),
    ]
    if out.get("run"):
        lines.append("runner-side (stays on the RunConfig):")
        lines.extend(f"  {k} = {leaf_text(v)}" for k, v in flatten(out["run"]))
    if not out.get("serverLaunch"):
        lines.append(
            f"note: {out['launcher']} has no server-side launch route (EC2, GCE, Kube only)"
        )
    _emit(out, as_json, "\n".join(lines))
