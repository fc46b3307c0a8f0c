"""``lakeshore launch | instances | queues``: server-side launching from the command line.

    lakeshore launch [--mode M] [--provider P] [--count N] [--field k=v] [--command CMD]
                     [--client-token T] [--json]
    lakeshore instances list [--provider P] [--all] [--no-live] [--json]
    lakeshore instances terminate ID [--json]
    lakeshore queues add NAME --provider P [--mode M] [--min N] [--max N]
                         [--idle-seconds S] [--idle-action terminate|suspend]
                         [--providers P1,P2,… [--strategy priority|cheapest|spread|least-waste]]
    lakeshore queues update NAME [...] | list | remove NAME | status NAME [--json]

The control plane does the launching (it holds the SDK clients and the decrypted
credentials); this only asks. ``launch`` sends one client token per invocation and
retries a call that timed out or was cut with the same token, so nothing launches
twice.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import typer

from .common import fail
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

instances_app = typer.Typer(
    help="Instances this control plane launched (live state from the cloud).",
    no_args_is_help=True,
)
queues_app = typer.Typer(help="Queues that grow their own workers.", no_args_is_help=True)

LAUNCH_TIMEOUT = 900.0
RETRIES = 2


def _instance_line(i: dict[str, Any]) -> str:
    queue = f"  queue {i['queue']}" if i.get("queue") else ""
    outcome = (i.get("details") or {}).get("outcome") or {}
    code = f"  exit {outcome['exitCode']}" if outcome.get("exitCode") is not None else ""
    why = f"  ({i['reason']})" if i.get("reason") else ""
    launcher = i.get("launcher") or "?"
    return f"{i['id']}  {i['provider']} ({launcher})  {i['state']}{code}{queue}{why}"


def launch_command(
    mode: Annotated[
        str | None, typer.Option("--mode", "-m", help="A stored mode to launch.")
    ] = None,
    provider: Annotated[
        str | None, typer.Option("--provider", "-p", help="The provider (overrides the mode's).")
    ] = None,
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=20, help="How many.")] = 1,
    fields: FieldOpt = None,
    command: Annotated[
        str | None, typer.Option("--command", help="For direct dispatch: the command to run.")
    ] = None,
    client_token: Annotated[
        str | None,
        typer.Option("--client-token", help="Idempotency key (default: a fresh one per run)."),
    ] = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Launch through a provider, server-side: instances, pods, jobs or daemons."""
    if mode is None and provider is None:
        fail("name what to launch", "lakeshore launch --mode MODE   # or --provider PROVIDER")
    body: dict[str, Any] = {"count": count, "clientToken": client_token or uuid.uuid4().hex}
    if mode:
        body["mode"] = mode
    if provider:
        body["provider"] = provider
    extra = _patch(fields, "--field")
    if extra:
        body["runConfig"] = extra
    if command:
        body["command"] = command
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "POST", "launch", body=body, timeout=LAUNCH_TIMEOUT, retries=RETRIES)
    lines = [
        f"launched {len(out.get('instances', []))} through {out['provider']} "
        f"({out['launcher']}, dispatch {out['dispatch']})"
        + (" (already launched by this client token)" if out.get("replayed") else ""),
        *(f"  {_instance_line(i)}" for i in out.get("instances", [])),
        f"client token: {out['clientToken']}",
        "next: lakeshore instances list",
    ]
    _emit(out, as_json, "\n".join(lines))


@instances_app.command("list")
def instances_list(
    provider: Annotated[
        str | None, typer.Option("--provider", "-p", help="Only this provider.")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Also terminated ones.")] = False,
    live: Annotated[
        bool, typer.Option("--live/--no-live", help="Ask the provider for live state.")
    ] = True,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What this control plane launched, with live state."""
    client = _client(server, namespace, token_file, data_dir)
    query = {"provider": provider, "all": str(all_).lower(), "live": str(live).lower()}
    out = _call(client, "GET", "instances", query=query, timeout=120)
    rows = out.get("instances", [])
    lines = [_instance_line(i) for i in rows] or ["no instances"]
    for p, err in (out.get("errors") or {}).items():
        lines.append(f"warning: live state of {p} unknown: {err}")
    _emit(out, as_json, "\n".join(lines))


@instances_app.command("terminate")
def instances_terminate(
    instance_id: Annotated[str, typer.Argument(help="The instance id (see instances list).")],
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Terminate an instance and revoke its token."""
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "DELETE", "instances", instance_id, timeout=300, retries=RETRIES)
    _emit(out, as_json, f"terminated {_instance_line(out)}")


# -- queues ---------------------------------------------------------------------------


def _queue_body(
    provider: str | None,
    mode: str | None,
    min_: int | None,
    max_: int | None,
    idle_seconds: float | None,
    idle_action: str | None,
    providers: str | None = None,
    strategy: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if providers is not None:
        body["providers"] = [p.strip() for p in providers.split(",") if p.strip()]
    for key, value in (
        ("strategy", strategy),
        ("provider", provider),
        ("mode", mode),
        ("min", min_),
        ("max", max_),
        ("idleSeconds", idle_seconds),
        ("idleAction", idle_action),
    ):
        if value is not None:
            body[key] = value
    return body


ProviderOpt = Annotated[str | None, typer.Option("--provider", "-p", help="Provider to grow on.")]
ModeOpt = Annotated[str | None, typer.Option("--mode", "-m", help="Mode to launch with.")]
MinOpt = Annotated[int | None, typer.Option("--min", min=0, help="Workers kept even when idle.")]
MaxOpt = Annotated[int | None, typer.Option("--max", min=0, help="Most workers at once.")]
IdleOpt = Annotated[
    float | None, typer.Option("--idle-seconds", min=0, help="Idle time before a worker goes.")
]
ActionOpt = Annotated[
    str | None,
    typer.Option("--idle-action", help="terminate (default) or suspend (when the launcher can)."),
]
ProvidersOpt = Annotated[
    str | None,
    typer.Option(
        "--providers", help="Several providers to place on, comma-separated (see --strategy)."
    ),
]
StrategyOpt = Annotated[
    str | None,
    typer.Option(
        "--strategy", help="With --providers: priority (default), cheapest, spread, least-waste."
    ),
]


def _queue_prose(q: dict[str, Any]) -> str:
    mode = f" mode {q['mode']}" if q.get("mode") else ""
    where = f"provider {q['provider']}"
    if len(q.get("providers") or []) > 1:
        where = f"providers {','.join(q['providers'])} ({q.get('strategy') or 'priority'})"
    return (
        f"{q['name']}  {where}{mode}  min {q['min']} max {q['max']}  "
        f"idle {q['idleSeconds']:g}s → {q['idleAction']}"
    )


@queues_app.command("add")
def queues_add(
    name: Annotated[str, typer.Argument(help="Queue name.")],
    provider: ProviderOpt = None,
    mode: ModeOpt = None,
    min_: MinOpt = None,
    max_: MaxOpt = None,
    idle_seconds: IdleOpt = None,
    idle_action: ActionOpt = None,
    providers: ProvidersOpt = None,
    strategy: StrategyOpt = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a queue that grows its own workers through a provider (or several)."""
    if not provider and not providers:
        fail("a queue needs --provider", f"lakeshore queues add {name} --provider NAME --max 2")
    body = {
        "name": name,
        **_queue_body(provider, mode, min_, max_, idle_seconds, idle_action, providers, strategy),
    }
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "POST", "queues", body=body)
    _emit(out, as_json, f"added {_queue_prose(out)}\nnext: lakeshore queues status {name}")


@queues_app.command("update")
def queues_update(
    name: Annotated[str, typer.Argument(help="Queue name.")],
    provider: ProviderOpt = None,
    mode: ModeOpt = None,
    min_: MinOpt = None,
    max_: MaxOpt = None,
    idle_seconds: IdleOpt = None,
    idle_action: ActionOpt = None,
    providers: ProvidersOpt = None,
    strategy: StrategyOpt = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a queue's provider(s), strategy, mode or bounds."""
    body = _queue_body(provider, mode, min_, max_, idle_seconds, idle_action, providers, strategy)
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "PATCH", "queues", name, body=body)
    _emit(out, as_json, f"updated {_queue_prose(out)}")


@queues_app.command("list")
def queues_list(
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The queues of the namespace."""
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "GET", "queues")
    _emit(out, as_json, "\n".join(_queue_prose(q) for q in out) or "no queues")


@queues_app.command("remove")
def queues_remove(
    name: Annotated[str, typer.Argument(help="Queue name.")],
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove a queue (its workers stay until terminated: lakeshore instances terminate)."""
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "DELETE", "queues", name)
    _emit(out, as_json, f"removed {out['name']}")


@queues_app.command("status")
def queues_status(
    name: Annotated[str, typer.Argument(help="Queue name.")],
    events: Annotated[int, typer.Option("--events", min=1, max=500, help="Decisions shown.")] = 20,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Pending work, workers, and the reconcile loop's latest decisions."""
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "GET", "queues", name, "status", query={"events": events})
    lines = [
        _queue_prose(out),
        f"pending work: {out['pending']}",
        f"workers ({len(out['instances'])}):",
        *(f"  {_instance_line(i)}" for i in out["instances"]),
        "decisions:",
        *(f"  {e['at']}  {e['action']}  {e['detail']}" for e in out["events"]),
    ]
    if not out["events"]:
        lines.append("  none yet")
    _emit(out, as_json, "\n".join(lines))
