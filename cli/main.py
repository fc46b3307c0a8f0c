"""The ``dreamlake`` command: parse flags, call the engine, render, exit.

Exit codes: 0 for every coherent state (needs_input included), 1 when the tool
could not do its job — bad flags too. ``--json`` prints exactly one JSON document
on stdout. Nothing here ever prompts.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from dreamlake.engine.contract import ProviderLifecycleResult

if TYPE_CHECKING:
    from dreamlake.engine.errors import DreamlakeError

from .conventions import HELP_OPTIONS, plain_help, setup_logging, version_callback

app = typer.Typer(
    name="dreamlake",
    help="An agent-drivable provisioning engine. Every run prints where a provider stands "
    "and the next action.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Plain help, as written: no markup parsing (a regex's [..] stays), and no rich
    # import (with markdown) before a person or an agent sees a line.
    rich_markup_mode=None,
    context_settings=HELP_OPTIONS,
)
provider_app = typer.Typer(
    help="Lifecycle of one provider: create, plan, apply, connect, status; day 2: suspend, "
    "resume, reconcile, destroy, delete, list; its control-plane row: create -f, show, update.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(provider_app, name="provider")


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=version_callback("dreamlake"),
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            help="Log every subprocess (command line, exit code, time taken) to stderr. "
            "Also DREAMLAKE_LOG=debug. terraform's own TF_LOG passes through.",
        ),
    ] = False,
) -> None:
    setup_logging(verbose)


Name = Annotated[
    str, typer.Option("-n", "--name", help="The provider's name (^[a-z0-9][a-z0-9-]*$).")
]
DreamDir = Annotated[
    str | None,
    typer.Option(
        "--dream-dir",
        help="Folder holding .dream/ (default: beside the nearest .dreamrc, else cwd).",
    ),
]
Json = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout, nothing else.")
]
Events = Annotated[
    bool,
    typer.Option(
        "--events",
        help="Write progress events to stderr as they happen, one JSON object a line "
        "(`dreamlake schema --events`); stdout is unchanged.",
    ),
]


def _call(
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
        result = _run_verb(verb, name, dream_dir, fn)
        if rec is not None:
            rec.emit("end", status=result.status, message=result.status)
    return result


def _run_verb(
    verb: str, name: str, dream_dir: str | None, fn: Callable[[], ProviderLifecycleResult]
) -> ProviderLifecycleResult:
    """Run an engine verb; an unexpected failure still becomes one error result."""
    from .run import call

    return call(verb, name, dream_dir, fn)


def _emit(result: ProviderLifecycleResult, as_json: bool) -> None:
    from .run import write

    raise typer.Exit(write(result, as_json))


def _announce(verb: str, name: str, dream_dir: str | None, as_json: bool) -> None:
    """The chosen root, printed before anything is written."""
    from .run import announce

    announce(verb, name, dream_dir, as_json)


def _progress(as_json: bool) -> Callable[[str], None] | None:
    from dreamlake.engine import events

    if as_json or events.active():  # events carry the progress (--events, live view)
        return None

    def say(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    return say


@provider_app.command("create")
def create_cmd(
    name: Annotated[
        str | None, typer.Option("-n", "--name", help="The provider's name (^[a-z0-9][a-z0-9-]*$).")
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "-f", "--file", help="Register a provider row from YAML/JSON {name, launcher, kwargs}."
        ),
    ] = None,
    vendor: Annotated[
        str | None,
        typer.Option(
            "--provider",
            help="The vendor template: kube, ec2, gce, local, ssh (an existing provider keeps its own).",
        ),
    ] = None,
    backend: Annotated[
        str | None, typer.Option("--backend", help="terraform (default) or pulumi.")
    ] = None,
    continue_: Annotated[
        bool, typer.Option("--continue", help="The directory is expected: re-scan the decisions.")
    ] = False,
    stack: Annotated[
        str | None,
        typer.Option(
            "--stack",
            help="With --backend pulumi: adopt this existing stack (ORG/PROJECT/STACK) instead "
            "of scaffolding a program.",
        ),
    ] = None,
    dream_dir: DreamDir = None,
    as_json: Json = False,
    events: Events = False,
) -> None:
    """Scaffold a provider once and report every decision it cannot make itself
    (with -f: register a provider row in the control plane instead)."""
    from dreamlake.engine.verbs.create import create

    if file is not None:
        from .provider_rows import create_from_file

        create_from_file(file, dream_dir, as_json)
    if name is None:
        raise typer.BadParameter("-n NAME is required (or -f FILE for a provider row)")

    _announce("create", name, dream_dir, as_json)
    _emit(
        _call(
            "create",
            name,
            dream_dir,
            lambda: create(
                name,
                vendor,
                backend=backend,
                continue_=continue_,
                dream_dir=dream_dir,
                stack=stack,
            ),
            as_json,
            events,
        ),
        as_json,
    )


@provider_app.command("status")
def status_cmd(
    name: Name, dream_dir: DreamDir = None, as_json: Json = False, events: Events = False
) -> None:
    """Where the provider stands, derived from the world."""
    from dreamlake.engine.verbs.status import status

    _announce("status", name, dream_dir, as_json)
    _emit(
        _call(
            "status", name, dream_dir, lambda: status(name, dream_dir=dream_dir), as_json, events
        ),
        as_json,
    )


@provider_app.command("plan")
def plan_cmd(
    name: Name, dream_dir: DreamDir = None, as_json: Json = False, events: Events = False
) -> None:
    """init + validate + plan into a saved plan. Reads and costs nothing."""
    from dreamlake.engine.verbs.plan import plan

    _announce("plan", name, dream_dir, as_json)
    _emit(
        _call(
            "plan",
            name,
            dream_dir,
            lambda: plan(name, dream_dir=dream_dir, progress=_progress(as_json)),
            as_json,
            events,
        ),
        as_json,
    )


@provider_app.command("apply")
def apply_cmd(
    name: Name,
    yes: Annotated[
        bool, typer.Option("--yes", help="Apply the saved plan. This spends money.")
    ] = False,
    dream_dir: DreamDir = None,
    as_json: Json = False,
    events: Events = False,
) -> None:
    """Apply exactly the saved plan — only with --yes."""
    from dreamlake.engine.verbs.apply import apply

    _announce("apply", name, dream_dir, as_json)
    _emit(
        _call(
            "apply",
            name,
            dream_dir,
            lambda: apply(name, yes=yes, dream_dir=dream_dir, progress=_progress(as_json)),
            as_json,
            events,
        ),
        as_json,
    )


@provider_app.command("connect")
def connect_cmd(
    name: Name,
    host: Annotated[str | None, typer.Option("--host", help="user@host to adopt over SSH.")] = None,
    dream_dir: DreamDir = None,
    as_json: Json = False,
    events: Events = False,
) -> None:
    """Start a daemon that claims the provider, under the best supervisor the host has."""
    from dreamlake.engine.verbs.connect import connect

    _announce("connect", name, dream_dir, as_json)
    _emit(
        _call(
            "connect",
            name,
            dream_dir,
            lambda: connect(name, host=host, dream_dir=dream_dir, progress=_progress(as_json)),
            as_json,
            events,
        ),
        as_json,
    )


@app.command("providers")
def providers_cmd(
    name: Annotated[str | None, typer.Argument(help="Show one provider.")] = None,
    dreamrc: Annotated[
        str | None, typer.Option("--dreamrc", help="Read this file instead of resolving one.")
    ] = None,
    pull: Annotated[
        bool, typer.Option("--pull", help="Allow a control-plane pull when no local file exists.")
    ] = False,
    as_json: Json = False,
) -> None:
    """Providers from .dreamrc (--dreamrc, $DREAMRC, walking up from cwd, ~/.dreamrc,
    then the last pull's cache): no control-plane round trip unless --pull."""
    import json
    import shlex

    from dreamlake.engine.dreamrc import load_dreamrc
    from dreamlake.engine.errors import DreamlakeError

    try:
        rc = load_dreamrc(dreamrc, pull=pull)
    except DreamlakeError as exc:
        bad = getattr(exc, "path", None)  # a .dreamrc to fix, then list again
        again = "dreamlake providers" + (f" --dreamrc {shlex.quote(dreamrc)}" if dreamrc else "")
        command = again if bad is not None else "dreamlake providers --help"
        _providers_error(exc.message, exc.kind, command, as_json, file=bad)
    specs = [rc.providers[name]] if name and name in rc.providers else list(rc.providers.values())
    if name and name not in rc.providers:
        again = "dreamlake providers" + (f" --dreamrc {shlex.quote(dreamrc)}" if dreamrc else "")
        msg = f"no provider {name!r} in {rc.where()}"
        _providers_error(msg, "unknown_provider", again, as_json, source=rc.source)
    if as_json:
        doc = {
            "source": rc.source,
            "path": str(rc.path) if rc.path else None,
            "providers": [s.to_dict() for s in specs],
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    sys.stdout.write(f"dreamrc: {rc.where()} ({rc.source})\n")
    if not specs:
        sys.stdout.write("no providers defined\n")
    for s in specs:
        sys.stdout.write(
            f"{s.name}  {s.launcher}  {s.dispatch}  {json.dumps(s.kwargs, sort_keys=True)}\n"
        )


def _providers_error(
    message: str,
    kind: str,
    command: str,
    as_json: bool,
    file: Path | None = None,
    **extra: object,
) -> NoReturn:
    """An error of ``dreamlake providers``: rc 1, and like every error a next action
    (with ``file``: fix that file, then run ``command``)."""
    import json

    if as_json:
        nxt: dict[str, str] = {"kind": "run", "command": command}
        if file is not None:
            nxt = {"kind": "edit_then_continue", "file": str(file), "command": command}
        doc = {"error": message, "kind": kind, **extra, "nextAction": nxt}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        edit = f"edit {file}, then " if file is not None else ""
        sys.stderr.write(f"✗ {message}\nnext: {edit}{command}\n")
    raise typer.Exit(1)


@app.command("schema")
def schema_cmd(
    events: Annotated[
        bool, typer.Option("--events", help="The schema of one progress event instead.")
    ] = False,
) -> None:
    """Print the JSON Schema of the result every verb returns (or of a progress event)."""
    import json

    from dreamlake.engine.contract import json_schema

    if events:
        from dreamlake.engine.events import json_schema as event_schema

        sys.stdout.write(json.dumps(event_schema(), indent=2, sort_keys=True) + "\n")
        return
    sys.stdout.write(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")


@app.command("mcp")
def mcp_cmd(dream_dir: DreamDir = None) -> None:
    """Serve the lifecycle verbs as MCP tools over stdio (install the `mcp` extra)."""
    from .mcp_server import serve

    raise typer.Exit(serve(dream_dir=dream_dir))


@app.command("demo")
def demo_cmd() -> None:
    """Walk a `local` provider from create to connected on this machine, then clean up."""
    from dreamlake.engine.demo import run_demo

    raise typer.Exit(run_demo())


@app.command("version")
def version_cmd() -> None:
    """Print the engine version."""
    import dreamlake

    sys.stdout.write(f"dreamlake {dreamlake.__version__}\n")


def _cli_error(
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

        from dreamlake.engine import lakeshore

        cp = lakeshore.resolve_control_plane(Path.cwd(), strict=False)
        name = ""
        for flag in ("-n", "--name"):
            if flag in argv and argv.index(flag) + 1 < len(argv):
                name = argv[argv.index(flag) + 1]
        doc = {
            "status": "error",
            "provider": name,
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


def _escaped(exc: DreamlakeError, argv: list[str]) -> int:
    """An engine error a command did not turn into a result: rc 1, the error, and a
    next action on the same target (the file at fault, then this command again)."""
    import shlex

    from dreamlake.engine.contract import EditThenContinue

    nxt = exc.next_action
    if nxt is not None:
        file = nxt.file if isinstance(nxt, EditThenContinue) else None
        return _cli_error(exc.message, argv, kind=exc.kind, command=nxt.command, file=file)
    bad = getattr(exc, "path", None)
    return _cli_error(
        exc.message,
        argv,
        kind=exc.kind,
        command=shlex.join(["dreamlake", *argv]),
        file=str(bad) if bad is not None else None,
    )


INTERRUPTED = 130


def _interrupted(argv: list[str]) -> int:
    """Ctrl-C: whatever was running stopped; status tells where things stand now."""
    from dreamlake.engine.errors import UsageError
    from dreamlake.engine.paths import check_name

    name = ""
    for flag in ("-n", "--name"):
        if flag in argv and argv.index(flag) + 1 < len(argv):
            name = argv[argv.index(flag) + 1]
    try:
        command = f"dreamlake provider status -n {check_name(name)}"
    except UsageError:
        command = "dreamlake provider --help"
    return _cli_error("interrupted", argv, kind="interrupted", command=command)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        rv = app(args=args, prog_name="dreamlake", standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except (typer.Abort, KeyboardInterrupt):
        return _interrupted(args)
    except Exception as exc:
        from dreamlake.engine.errors import DreamlakeError

        if isinstance(exc, DreamlakeError):  # e.g. a broken .dreamrc read before the verb ran
            return _escaped(exc, args)
        # typer's usage errors (click's UsageError family): bad or missing flags.
        fmt = getattr(exc, "format_message", None)
        if fmt is None or not any(c.__name__ == "UsageError" for c in type(exc).__mro__):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.stdout.write(fmt() + "\n")
            return 0
        return _cli_error(fmt(), args)
    if rv == INTERRUPTED:  # typer answers Ctrl-C with 130; no command of ours does
        return _interrupted(args)
    return int(rv or 0) if isinstance(rv, int) else 0


# The day-2, row CRUD, stateful lifecycle and pool verbs live in their own modules,
# registered on the same groups.
from . import pool, provider_day2, provider_lifecycle, provider_rows  # noqa: E402, F401

plain_help(app)  # every group, those registered above included

if __name__ == "__main__":  # python -m dreamlake.cli.main
    # The imported module is the one the command modules registered on, not __main__.
    from dreamlake.cli.main import main as _registered_main

    raise SystemExit(_registered_main())
