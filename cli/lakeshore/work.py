"""``lakeshore claims`` and ``lakeshore work``: who claims a provider, and a shell
command run on its daemons."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from .options import (
    DataDirOpt,
    JsonOpt,
    NamespaceOpt,
    ServerOpt,
    TokenFileOpt,
    call,
    emit,
    make_client,
)

work_app = typer.Typer(help="Run a shell command on a provider's daemons.", no_args_is_help=True)


def _ago(stamp: str) -> str:
    from datetime import UTC, datetime

    try:
        seen = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    return f"{max(0, int((datetime.now(UTC) - seen).total_seconds()))}s ago"


def claims(
    provider: Annotated[str, typer.Argument(help="Provider name.")],
    namespace: NamespaceOpt = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Who claims PROVIDER: live and gone daemons. Zero live is normal, exit 0."""
    client = make_client(server, token_file, data_dir, namespace)
    out = call(client.claims, provider)
    lines = [f"{out['live']} live, {out['gone']} gone claiming {provider!r} in {client.namespace}"]
    for i in out["instances"]:
        queues = ", ".join(i["queues"]) or "-"
        lines.append(f"{i['instanceId']}  {i['state']}  {_ago(i['lastSeen'])}  queues: {queues}")
    emit(out, as_json, "\n".join(lines))


def _work_prose(w: dict[str, Any]) -> str:
    text = f"work {w['id']}  {w['state']}"
    if w.get("exitCode") is not None:
        text += f"  exit {w['exitCode']}"
    if w.get("error"):
        text += f"  ({w['error']})"
    if w.get("outputTail"):
        text += "\n" + str(w["outputTail"]).rstrip("\n")
    return text


def _work_exit(w: dict[str, Any], waited: bool) -> None:
    if waited and w["state"] != "succeeded":
        raise typer.Exit(1)


@work_app.command("submit")
def work_submit(
    provider: Annotated[str, typer.Argument(help="Provider name.")],
    command: Annotated[str, typer.Argument(help="Shell command (run with /bin/sh -c).")],
    queue: Annotated[str | None, typer.Option(help="Only daemons serving this queue.")] = None,
    timeout: Annotated[
        float | None, typer.Option(help="Kill the command after this many seconds.")
    ] = None,
    wait: Annotated[
        float,
        typer.Option(
            help="Wait up to this many seconds for the result (exit 1 unless it succeeded)."
        ),
    ] = 0.0,
    namespace: NamespaceOpt = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Queue COMMAND for PROVIDER's daemons; prints the work id (or, with --wait, the result)."""
    client = make_client(server, token_file, data_dir, namespace)
    item = call(client.submit_work, provider, command, queue=queue, timeout_seconds=timeout)
    waited = wait > 0
    end = time.monotonic() + wait
    while waited and item["state"] not in ("succeeded", "failed", "lost"):
        left = end - time.monotonic()
        if left <= 0:
            break
        item = call(client.get_work, item["id"], wait=min(left, 60.0))
    emit(item, as_json, _work_prose(item) if waited else item["id"])
    _work_exit(item, waited)


@work_app.command("show")
def work_show(
    work_id: Annotated[str, typer.Argument(help="Work id from `work submit`.")],
    wait: Annotated[
        float, typer.Option(help="Wait up to this many seconds for it to finish.")
    ] = 0.0,
    namespace: NamespaceOpt = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One work item: state, exit code, output tail."""
    client = make_client(server, token_file, data_dir, namespace)
    item = call(client.get_work, work_id, wait=min(max(wait, 0.0), 60.0))
    emit(item, as_json, _work_prose(item))
