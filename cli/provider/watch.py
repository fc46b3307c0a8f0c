"""``dreamlake provider watch``: the watcher, in the foreground or installed.

    dreamlake provider watch --all [--interval S] [--drift-interval S] [--once] [--json]
    dreamlake provider watch -n lab -n web --once --json
    dreamlake provider watch --all --install     # a systemd user unit, else a tmux session

Prose: one line per event; ``--json``: one JSON object per line per event. Exit 0
when stopped (SIGTERM, SIGINT) or after ``--once``; 1 when another watcher holds
the root (it is named) or the flags are wrong — with ``--json``, one JSON error
line with a ``nextAction``.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from ..groups import provider_app
from ..options import NAME_HELP, DreamDir

if TYPE_CHECKING:
    from dreamlake.engine.contract.errors import DreamlakeError


def _line(event: dict[str, Any]) -> str:
    """One event as a line a person reads."""
    kind = event.get("event")
    at = str(event.get("at") or "")[11:19]
    who = event.get("provider")
    nxt = event.get("nextAction") or {}
    tail = ""
    if isinstance(nxt, dict) and nxt.get("command"):
        edit = f"edit {nxt['file']}, then " if nxt.get("file") else ""
        tail = f"  next: {edit}{nxt['command']}"
    if kind == "state":
        flag = " ⚠ needs a person's yes" if event.get("gated") else ""
        return (
            f"{at} {who}: {event['status']} (target {event['targetStatus']}) → "
            f"{event['step']} [{event['does']}]{flag} — {event['why']}{tail}"
        )
    if kind in ("acting", "acted", "backoff", "drift"):
        rest = {k: v for k, v in event.items() if k not in ("event", "at", "provider")}
        brief = ", ".join(f"{k}={v}" for k, v in rest.items() if k != "nextAction" and v)
        return f"{at} {who}: {kind} {brief}{tail}"
    if kind == "failed":
        return (
            f"{at} {who}: ✗ {event['step']} failed ({event.get('error') or event['status']}); "
            f"tried again in {event['retryInSeconds']:g}s{tail}"
        )
    if kind == "pass":
        return (
            f"{at} pass: {event['providers']} provider(s), {event['acted']} acted, "
            f"{event['gated']} gated, {event['published']} published, "
            f"{event['seconds']:g}s" + (" (drift checked)" if event.get("drift") else "")
        )
    if kind == "watching":
        h = event["holder"]
        return (
            f"watching {event['root']} ({event['providers']}) every {event['interval']:g}s, "
            + (f"drift every {d:g}s" if (d := event["driftInterval"]) else "drift never checked")
            + f"; pid {h['pid']} holds {event['lock']}"
        )
    return f"{at} {kind}" + (f" {who}" if who else "")


def _printer(as_json: bool) -> Any:
    def emit(event: dict[str, Any]) -> None:
        text = json.dumps(event, separators=(",", ":")) if as_json else _line(event)
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    return emit


def _fail(exc: DreamlakeError, as_json: bool) -> NoReturn:
    nxt = exc.next_action
    command = nxt.command if nxt is not None else "dreamlake provider watch --help"
    if as_json:
        doc: dict[str, Any] = {"event": "error", "error": exc.message, "kind": exc.kind}
        holder = getattr(exc, "holder", None)
        if holder is not None:
            doc["holder"] = holder.to_wire()
        doc["nextAction"] = {"kind": "run", "command": command}
        sys.stdout.write(json.dumps(doc, separators=(",", ":")) + "\n")
    else:
        sys.stderr.write(f"✗ {exc.message}\nnext: {command}\n")
    raise typer.Exit(1)


@provider_app.command("watch")
def watch_cmd(
    names: Annotated[
        list[str] | None,
        typer.Option("-n", "--name", metavar="NAME", help=NAME_HELP + " Repeat to watch several."),
    ] = None,
    all_providers: Annotated[
        bool, typer.Option("--all", help="Watch every provider of the root.")
    ] = False,
    interval: Annotated[
        float, typer.Option("--interval", help="Seconds between passes.", min=0.1)
    ] = 60.0,
    drift_interval: Annotated[
        float,
        typer.Option(
            "--drift-interval",
            help="Seconds between drift checks (terraform plan -refresh-only, pulumi preview "
            "--refresh); 0: never.",
            min=0.0,
        ),
    ] = 900.0,
    once: Annotated[
        bool, typer.Option("--once", help="One pass, then exit (for cron, and for a look).")
    ] = False,
    install: Annotated[
        bool,
        typer.Option(
            "--install",
            help="Run this watcher under a supervisor instead: a systemd user unit, else a "
            "tmux session; prints which, and exits.",
        ),
    ] = False,
    dream_dir: DreamDir = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object a line on stdout, one per event.")
    ] = False,
) -> None:
    """Keep providers where target_status says: each pass derives every status, performs
    the next ungated step (a dead daemon is connected again), reports gated ones, and
    publishes what it saw to the control plane. One watcher per root."""
    from dreamlake.engine.contract.errors import DreamlakeError

    if install:
        from dreamlake.engine.watcher.install import install_watcher

        try:
            done = install_watcher(
                names=names,
                all_providers=all_providers,
                dream_dir=dream_dir,
                interval=interval,
                drift_interval=drift_interval,
            )
        except DreamlakeError as exc:
            _fail(exc, as_json)
        out = json.dumps(done) if as_json else "\n".join(done["lines"])
        sys.stdout.write(out + "\n")
        raise typer.Exit(0)
    from dreamlake.engine.verbs.watch import watch

    try:
        code = watch(
            names=names,
            all_providers=all_providers,
            dream_dir=dream_dir,
            interval=interval,
            drift_interval=drift_interval,
            once=once,
            emit=_printer(as_json),
        )
    except DreamlakeError as exc:
        _fail(exc, as_json)
    raise typer.Exit(code)
