"""Running an engine verb from a typer command and answering for it: progress where
this run wants it, the result printed, the exit code; and the one error document a
command line gets when no verb ran (bad flags, Ctrl-C, an engine error that escaped).

Shared by every ``dreamlake`` command module and the MCP server; imports nothing of
theirs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from dreamlake.engine.contract.errors import DreamlakeError
    from dreamlake.engine.contract.result import ProviderLifecycleResult


def call(
    verb: str,
    name: str,
    dream_dir: str | None,
    fn: Callable[[], ProviderLifecycleResult],
    as_json: bool = True,
    events: bool = False,
) -> ProviderLifecycleResult:
    """Run an engine verb with its progress going where this run wants it (see
    progress_view); the last event, ``end``, comes before the result is printed."""
    from .progress_view import watching

    with watching(verb, name, as_json=as_json, emit_events=events) as rec:
        result = run_verb(verb, name, dream_dir, fn)
        if rec is not None:
            rec.emit("end", status=result.status, message=result.status)
    return result


def run_verb(
    verb: str, name: str, dream_dir: str | None, fn: Callable[[], ProviderLifecycleResult]
) -> ProviderLifecycleResult:
    """Run an engine verb; an unexpected failure still becomes one error result."""
    from . import run

    return run.call(verb, name, dream_dir, fn)


def emit(result: ProviderLifecycleResult, as_json: bool) -> NoReturn:
    import typer

    from .run import write

    raise typer.Exit(write(result, as_json))


def announce(verb: str, name: str, dream_dir: str | None, as_json: bool) -> None:
    """The chosen root, printed before anything is written."""
    from . import run

    run.announce(verb, name, dream_dir, as_json)


def progress(as_json: bool) -> Callable[[str], None] | None:
    from dreamlake.engine.contract import events

    if as_json or events.active():  # events carry the progress (--events, live view)
        return None

    def say(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    return say


def _name_in(argv: list[str]) -> str:
    for flag in ("-n", "--name"):
        if flag in argv and argv.index(flag) + 1 < len(argv):
            return argv[argv.index(flag) + 1]
    return ""


def cli_error(
    message: str,
    argv: list[str],
    *,
    kind: str = "usage",
    command: str = "dreamlake provider --help",
    file: str | None = None,
) -> int:
    """Bad flags or an interrupted run: rc 1 and, with --json, still one JSON
    document with a nextAction (with ``file``: fix that file, then ``command``)."""
    if "--json" in argv:
        import json

        from dreamlake.engine.world import lakeshore

        cp = lakeshore.resolve_control_plane(Path.cwd(), strict=False)
        doc = {
            "status": "error",
            "provider": _name_in(argv),
            "server": cp.url,
            "namespace": cp.namespace,
            "error": message,
            "kind": kind,
            "nextAction": {"kind": "run", "command": command}
            if file is None
            else {"kind": "edit_then_continue", "file": file, "command": command},
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        edit = f"edit {file}, then " if file is not None else ""
        sys.stderr.write(f"✗ {message}\nnext: {edit}{command}\n")
    return 1


def escaped(exc: DreamlakeError, argv: list[str]) -> int:
    """An engine error a command did not turn into a result: rc 1, the error, and a
    next action on the same target (the file at fault, then this command again)."""
    import shlex

    from dreamlake.engine.contract.result import EditThenContinue

    nxt = exc.next_action
    if nxt is not None:
        file = nxt.file if isinstance(nxt, EditThenContinue) else None
        return cli_error(exc.message, argv, kind=exc.kind, command=nxt.command, file=file)
    bad = getattr(exc, "path", None)
    return cli_error(
        exc.message,
        argv,
        kind=exc.kind,
        command=shlex.join(["dreamlake", *argv]),
        file=str(bad) if bad is not None else None,
    )


INTERRUPTED = 130


def interrupted(argv: list[str]) -> int:
    """Ctrl-C: whatever was running stopped; status tells where things stand now."""
    from dreamlake.engine.contract.errors import UsageError
    from dreamlake.engine.world.paths import check_name

    try:
        command = f"dreamlake provider status -n {check_name(_name_in(argv))}"
    except UsageError:
        command = "dreamlake provider --help"
    return cli_error("interrupted", argv, kind="interrupted", command=command)
