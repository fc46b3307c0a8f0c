"""``lakeshore providers``: add, update, list, show, remove/restore, hide/unhide,
test, and the interactive editor."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .common import fail

if TYPE_CHECKING:
    from dreamlake.controlplane.client import Client

from .registry_common import (
    DataDirOpt,
    JsonOpt,
    KwargOpt,
    KwargsFileOpt,
    NamespaceOpt,
    ServerOpt,
    TokenFileOpt,
    _call,
    _check_launcher,
    _client,
    _emit,
    _kwargs,
    _patch,
)

providers_app = typer.Typer(
    help="Provider rows: the accounts and connections lakeshore launches through.",
    no_args_is_help=True,
)


# --- providers ---------------------------------------------------------------


@providers_app.command("add")
def providers_add(
    name: Annotated[str, typer.Argument(help="Provider name (^[a-z0-9][a-z0-9-]*$).")],
    launcher: Annotated[str, typer.Option("--launcher", help="EC2, GCE, Kube, SSH or SLURM.")],
    kwarg: KwargOpt = None,
    kwargs_file: KwargsFileOpt = None,
    dispatch: Annotated[
        str | None,
        typer.Option(
            "--dispatch", help="direct, daemon or hybrid (SSH, SLURM) (default: by launcher)."
        ),
    ] = None,
    tunnel: Annotated[
        str | None, typer.Option("--tunnel", help="A tunnel name to reach the host through.")
    ] = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Register a provider."""
    from dreamlake.controlplane.registry.launchers import NAME_RULE, valid_name

    if not valid_name(name):
        fail(
            f"provider name {name!r} is invalid: names match {NAME_RULE}",
            "pick a lower-case name, e.g. aws-us-east",
        )
    _check_launcher(launcher)
    if dispatch is not None and dispatch not in ("direct", "daemon", "hybrid"):
        fail(f"--dispatch {dispatch!r} is not direct, daemon or hybrid")
    body: dict[str, Any] = {
        "name": name,
        "launcher": launcher,
        "kwargs": _kwargs(kwarg, kwargs_file),
    }
    if dispatch is not None:
        body["dispatch"] = dispatch
    if tunnel:
        body["tunnel"] = tunnel
    client = _client(server, namespace, token_file, data_dir)
    row = _call(client, "POST", "providers", body=body)
    _emit(
        row,
        as_json,
        f"added provider {row['name']} ({row['launcher']}, dispatch {row['dispatch']})",
    )


@providers_app.command("update")
def providers_update(
    name: Annotated[str, typer.Argument(help="Provider name.")],
    kwarg: KwargOpt = None,
    kwargs_file: KwargsFileOpt = None,
    dispatch: Annotated[
        str | None,
        typer.Option(
            "--dispatch", help='direct, daemon or hybrid; "" returns to the launcher default.'
        ),
    ] = None,
    tunnel: Annotated[
        str | None, typer.Option("--tunnel", help='Tunnel name; "" clears it.')
    ] = None,
    launcher: Annotated[str | None, typer.Option("--launcher", hidden=True)] = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a provider: --kwarg deep-merges (KEY=null deletes), --kwargs-file replaces."""
    if launcher is not None:
        fail(
            "--launcher is immutable; changing launcher means remove and re-add",
            f"lakeshore providers remove {name} && lakeshore providers add {name} --launcher {launcher} ...",
        )
    body: dict[str, Any] = {}
    if kwargs_file is not None:
        body["kwargs"] = _kwargs(kwarg, kwargs_file)
    elif kwarg:
        body["kwargsPatch"] = _patch(kwarg, "--kwarg")
    if dispatch is not None:
        if dispatch not in ("", "direct", "daemon", "hybrid"):
            fail(
                f'--dispatch {dispatch!r} is not direct, daemon or hybrid ("" resets to the default)'
            )
        body["dispatch"] = dispatch or None
    if tunnel is not None:
        body["tunnel"] = tunnel
    if not body:
        fail("nothing to update", f"lakeshore providers update {name} --kwarg KEY=VALUE")
    client = _client(server, namespace, token_file, data_dir)
    row = _call(client, "PATCH", "providers", name, body=body)
    _emit(row, as_json, f"updated provider {row['name']}")


@providers_app.command("list")
def providers_list(
    hidden: Annotated[bool, typer.Option("--hidden", help="Include hidden rows.")] = False,
    deleted: Annotated[bool, typer.Option("--deleted", help="Include soft-deleted rows.")] = False,
    all_: Annotated[
        bool, typer.Option("--all", help="Everything: hidden and deleted too.")
    ] = False,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List providers: NAME LAUNCHER DISPATCH [OBSERVED] KWARGS (hidden as [H], deleted as
    [D iso]; OBSERVED: what the engine's watcher last published, and how long ago)."""
    from dreamlake.controlplane.registry.render import providers_table

    client = _client(server, namespace, token_file, data_dir)
    rows = _call(client, "GET", "providers", query=_list_query(hidden, deleted, all_))
    _emit(rows, as_json, providers_table(rows) if rows else "(no providers)")


def _list_query(hidden: bool, deleted: bool, all_: bool) -> dict[str, Any]:
    query: dict[str, Any] = {}
    if all_:
        query["all"] = "true"
    if hidden:
        query["hidden"] = "true"
    if deleted:
        query["deleted"] = "true"
    return query


@providers_app.command("show")
def providers_show(
    name: Annotated[str, typer.Argument(help="Provider name.")],
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one provider (secret markers show as $secret:NAME; values never leave the server)."""
    from dreamlake.controlplane.registry.render import provider_detail

    client = _client(server, namespace, token_file, data_dir)
    row = _call(client, "GET", "providers", name)
    _emit(row, as_json, provider_detail(row))


def _simple(method: str, suffix: str | None, verb: str, body: Any = None):  # type: ignore[no-untyped-def]
    def command(
        name: Annotated[str, typer.Argument(help="Provider name.")],
        server: ServerOpt = None,
        namespace: NamespaceOpt = None,
        token_file: TokenFileOpt = None,
        data_dir: DataDirOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        client = _client(server, namespace, token_file, data_dir)
        parts = ("providers", name, suffix) if suffix else ("providers", name)
        row = _call(client, method, *parts, body=body)
        extra = f" at {row['deletedAt']}" if verb == "removed" and row.get("deletedAt") else ""
        _emit(row, as_json, f"{verb} provider {row['name']}{extra}")

    return command


providers_app.command("remove", help="Soft-delete a provider (restore brings it back).")(
    _simple("DELETE", None, "removed")
)
providers_app.command("restore", help="Restore a soft-deleted provider.")(
    _simple("POST", "restore", "restored")
)
providers_app.command("hide", help="Hide a provider from default listings.")(
    _simple("PATCH", None, "hid", {"hidden": True})
)
providers_app.command("unhide", help="Show a hidden provider in default listings again.")(
    _simple("PATCH", None, "unhid", {"hidden": False})
)


@providers_app.command("test")
def providers_test(
    name: Annotated[str, typer.Argument(help="Provider name.")],
    local: Annotated[
        bool,
        typer.Option(
            "--local", help="Check the provider as the resolved .dreamrc defines it; no server."
        ),
    ] = False,
    dreamrc: Annotated[
        Path | None,
        typer.Option(
            "--dreamrc", help="Check the provider as this .dreamrc defines it; no server."
        ),
    ] = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check a provider offline: required kwargs, types, secrets. Says what was not checked."""
    if local or dreamrc is not None:
        report = _local_report(name, dreamrc)
    else:
        client = _client(server, namespace, token_file, data_dir)
        report = _call(client, "POST", "providers", name, "test")
    lines = [
        f"provider {report['provider']} ({report['launcher']}): {'ok' if report['ok'] else 'FAILED'}"
    ]
    for c in report["checks"]:
        lines.append(f"  {'ok  ' if c['ok'] else 'FAIL'} {c['check']}: {c['detail']}")
    if report.get("stub"):
        lines.append(f"  stub: {report['stub']}")
    for item in report.get("notChecked", []):
        lines.append(f"  not checked: {item}")
    _emit(report, as_json, "\n".join(lines))
    if not report["ok"]:
        raise typer.Exit(1)


def _local_report(name: str, dreamrc: Path | None) -> dict[str, Any]:
    from dreamlake.controlplane.registry.check import check_provider
    from dreamlake.engine.settings.dreamrc import DreamrcError, load_dreamrc

    try:
        rc = load_dreamrc(dreamrc, pull=False)
    except DreamrcError as exc:
        fail(exc.message, "fix the .dreamrc at the file and line above")
    spec = rc.provider(name)
    if spec is None:
        known = ", ".join(sorted(rc.providers)) or "none"
        fail(
            f"no provider {name!r} in {rc.where()} (known: {known})",
            "lakeshore providers test NAME  # without --local asks the server",
        )

    def probe(secret: str) -> str | None:
        return (
            f"secret {secret!r} is a control-plane marker; a local .dreamrc cannot resolve it "
            "(credentials in .dreamrc are inline) — test it without --local against the server"
        )

    report = check_provider(name, spec.launcher, spec.kwargs, probe).to_wire()
    report["notChecked"].append(f"read from {rc.where()}; the control plane was not asked")
    return report


# --- the interactive editor ----------------------------------------------------

NO_TTY = (
    "providers edit is interactive and needs a terminal; without one use "
    "lakeshore providers hide/unhide/remove/restore NAME"
)


@providers_app.command("edit")
def providers_edit(
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Pick a provider, then hide/unhide/delete/restore it (a terminal is required)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail(NO_TTY, "lakeshore providers hide NAME   # or unhide / remove / restore")
    client = _client(server, namespace, token_file, data_dir)
    try:
        _edit_loop(client)
    except (KeyboardInterrupt, EOFError):
        typer.echo("\nleft the editor; nothing further changed")
        raise typer.Exit(0) from None


def _ask(prompt: str, count: int) -> int | None:
    """A 1-based choice, or None for a blank/invalid answer (the frame redraws)."""
    answer = input(prompt).strip()
    if answer.lower() in ("q", "quit"):
        return 2 if count >= 2 else None
    if answer.isdigit() and 1 <= int(answer) <= count:
        return int(answer)
    return None


def _edit_loop(client: Client) -> None:
    from dreamlake.controlplane.registry.render import display_name

    show_all = False
    note = ""
    while True:
        rows = _call(client, "GET", "providers", query={"all": "true"} if show_all else {})
        scope = "all providers (hidden and deleted included)" if show_all else "active providers"
        typer.echo(f"\n== lakeshore providers — {scope} ==")
        if note:
            typer.echo(note)
        toggle = "show active only" if show_all else "show hidden + deleted too"
        entries = [f"[{toggle}]", "[quit]"] + [
            f"{display_name(r)}  ({r['launcher']}, {r['dispatch']})" for r in rows
        ]
        for i, entry in enumerate(entries, 1):
            typer.echo(f"  {i:>2}. {entry}")
        choice = _ask(f"pick 1-{len(entries)}: ", len(entries))
        note = ""
        if choice is None:
            note = "(type a number from the list)"
            continue
        if choice == 1:
            show_all = not show_all
            continue
        if choice == 2:
            typer.echo("bye")
            return
        row = rows[choice - 3]
        note = _act(client, row)


def _act(client: Client, row: dict[str, Any]) -> str:
    from dreamlake.controlplane.registry.render import display_name

    name = row["name"]
    actions: list[tuple[str, str, tuple[str, ...], dict[str, Any] | None]]
    if row.get("deletedAt"):
        actions = [("restore", "POST", ("providers", name, "restore"), None)]
    elif row.get("hidden"):
        actions = [
            ("unhide", "PATCH", ("providers", name), {"hidden": False}),
            ("delete", "DELETE", ("providers", name), None),
        ]
    else:
        actions = [
            ("hide", "PATCH", ("providers", name), {"hidden": True}),
            ("delete", "DELETE", ("providers", name), None),
        ]
    typer.echo(f"\n-- {display_name(row)} --")
    labels = [a[0] for a in actions] + ["back"]
    for i, label in enumerate(labels, 1):
        typer.echo(f"  {i}. {label}")
    choice = _ask(f"action 1-{len(labels)}: ", len(labels))
    if choice is None or choice == len(labels):
        return ""
    label, method, parts, body = actions[choice - 1]
    _call(client, method, *parts, body=body)
    past = {"restore": "restored", "unhide": "unhid", "delete": "deleted", "hide": "hid"}[label]
    return f"{past} {name}"
