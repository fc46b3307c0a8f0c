"""``lakeshore providers | secrets | modes``: the registry from the command line.

    lakeshore providers add NAME --launcher EC2 --kwarg region=us-east-1 [--kwargs-file F]
                                 [--dispatch direct|daemon] [--tunnel T]
    lakeshore providers update NAME [--kwarg k=v | k=null] [--kwargs-file F] [--dispatch D] [--tunnel T]
    lakeshore providers list [--hidden] [--deleted] [--all] [--json]
    lakeshore providers show|remove|restore|hide|unhide|test NAME
    lakeshore providers edit                       # interactive, TTY only
    lakeshore secrets add NAME [--kind aws_keypair] (--value-file F | --value-env VAR | --value-stdin)
    lakeshore secrets list | remove NAME
    lakeshore modes add|update NAME --field k=v ... | list | show NAME | remove NAME
    lakeshore modes preview [MODE] [--provider P] [--field k=v]   # the launch-time merge

Every command takes ``--server``, ``--namespace``, ``--token-file``, ``--data-dir``
(defaults: ``LAKESHORE_URL``, ``LAKESHORE_NAMESPACE``, ``LAKESHORE_TOKEN`` /
``LAKESHORE_TOKEN_FILE``, the admin token ``lakeshore serve`` wrote). Nothing prompts
except ``providers edit``, and only on a terminal.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .lakeshore_common import fail, fail_from

if TYPE_CHECKING:
    from dreamlake.controlplane.client import Client

providers_app = typer.Typer(
    help="Provider rows: the accounts and connections lakeshore launches through.",
    no_args_is_help=True,
)
secrets_app = typer.Typer(
    help='Secrets, encrypted at rest; kwargs reference them as {"$secret": NAME}.',
    no_args_is_help=True,
)
modes_app = typer.Typer(help="Modes: stored RunConfigs that name a provider.", no_args_is_help=True)

ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server", help="Control plane URL (default: LAKESHORE_URL, else http://127.0.0.1:7878)."
    ),
]
NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace", "-N", help="Namespace (default: LAKESHORE_NAMESPACE, else 'default')."
    ),
]
TokenFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        help="File holding a bearer token (default: LAKESHORE_TOKEN / LAKESHORE_TOKEN_FILE).",
    ),
]
DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Server data directory, for the admin token (default: LAKESHORE_DATA_DIR).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
KwargOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--kwarg", help="KEY=VALUE, repeatable; dotted keys nest (a.b=c); KEY=null deletes."
    ),
]
KwargsFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--kwargs-file",
        help="YAML or JSON kwargs; on add the base --kwarg layers on, on update a wholesale replacement.",
    ),
]
FieldOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--field",
        help="KEY=VALUE, repeatable; dotted keys nest (resources.gpu=1); KEY=null deletes.",
    ),
]


def _client(
    server: str | None, namespace: str | None, token_file: Path | None, data_dir: Path | None
) -> Client:
    """Flags first; otherwise the engine's resolution (env, the ``.dreamrc``
    ``lakeshore:`` section, the embedded default and its admin token)."""
    from dreamlake.cli.lakeshore import make_client

    if token_file is not None or data_dir is not None:
        return make_client(server, token_file, data_dir, namespace)
    from dreamlake.controlplane.client import Client
    from dreamlake.engine.lakeshore import resolve_control_plane

    cp = resolve_control_plane(Path.cwd())
    if server is not None and server.rstrip("/") != cp.url:
        # the token resolved for cp.url (perhaps this machine's admin token) is not
        # for another server
        return make_client(server, None, None, namespace or cp.namespace)
    return Client(url=cp.url, token=cp.token, namespace=namespace or cp.namespace)


def _ns_path(client: Client, *parts: str) -> str:
    from urllib.parse import quote

    tail = "/".join(quote(p, safe="") for p in parts)
    return f"/api/namespaces/{quote(client.namespace, safe='')}/{tail}"


def _call(
    client: Client, method: str, *parts: str, body: Any = None, query: dict[str, Any] | None = None
) -> Any:
    from dreamlake.controlplane.client import ControlPlaneError

    try:
        return client.request(method, _ns_path(client, *parts), body, query=query)
    except ControlPlaneError as exc:
        fail_from(exc, client.namespace)


def _emit(data: Any, as_json: bool, prose: str) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True) if as_json else prose)


def _kwargs(
    items: list[str] | None, kwargs_file: Path | None, flag: str = "--kwarg"
) -> dict[str, Any]:
    from dreamlake.controlplane.registry.kwargs import KwargsError, build_kwargs

    try:
        return build_kwargs(items or [], kwargs_file, flag=flag)
    except KwargsError as exc:
        in_file = kwargs_file is not None and str(kwargs_file) in str(exc)
        fail(
            str(exc),
            f"fix {kwargs_file} (a YAML or JSON mapping) and re-run"
            if in_file
            else f"fix the {flag} value (KEY=VALUE, dotted keys nest) and re-run",
        )


def _patch(items: list[str] | None, flag: str) -> dict[str, Any]:
    from dreamlake.controlplane.registry.kwargs import KwargsError, assignments_to_patch

    try:
        return assignments_to_patch(items or [], flag=flag)
    except KwargsError as exc:
        fail(str(exc), f"fix the {flag} value (KEY=VALUE, dotted keys nest) and re-run")


def _check_launcher(launcher: str) -> str:
    from dreamlake.controlplane.registry.launchers import LAUNCHERS

    if launcher not in LAUNCHERS:
        fail(
            f"launcher {launcher!r} is not one of {', '.join(LAUNCHERS)} (spelled exactly so)",
            "re-run with --launcher " + "|".join(LAUNCHERS),
        )
    return launcher


# --- providers ---------------------------------------------------------------


@providers_app.command("add")
def providers_add(
    name: Annotated[str, typer.Argument(help="Provider name (^[a-z0-9][a-z0-9-]*$).")],
    launcher: Annotated[str, typer.Option("--launcher", help="EC2, GCE, Kube, SSH or SLURM.")],
    kwarg: KwargOpt = None,
    kwargs_file: KwargsFileOpt = None,
    dispatch: Annotated[
        str | None, typer.Option("--dispatch", help="direct or daemon (default: by launcher).")
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
    if dispatch is not None and dispatch not in ("direct", "daemon"):
        fail(f"--dispatch {dispatch!r} is not direct or daemon")
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
        typer.Option("--dispatch", help='direct or daemon; "" returns to the launcher default.'),
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
        if dispatch not in ("", "direct", "daemon"):
            fail(f'--dispatch {dispatch!r} is not direct or daemon ("" resets to the default)')
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
    """List providers: NAME LAUNCHER DISPATCH KWARGS (hidden as [H], deleted as [D iso])."""
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
    from dreamlake.engine.dreamrc import DreamrcError, load_dreamrc

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
