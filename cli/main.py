"""The ``dreamlake`` command: parse flags, call the engine, render, exit.

Exit codes: 0 for every coherent state (needs_input included), 1 when the tool
could not do its job — bad flags too. ``--json`` prints exactly one JSON document
on stdout. Nothing here ever prompts.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from .commands import app
from .conventions import plain_help
from .invoke import INTERRUPTED, cli_error, escaped, interrupted
from .options import DreamDir, Json


@app.command("providers")
def providers_cmd(
    name: Annotated[str | None, typer.Argument(help="Show one provider.")] = None,
    dreamrc: Annotated[
        str | None, typer.Option("--dreamrc", help="Read this file instead of resolving one.")
    ] = None,
    pull: Annotated[
        bool,
        typer.Option(
            "--pull/--no-pull",
            help="Pull from the control plane when no local file exists (LAKESHORE_URL or a "
            "token set); --no-pull: the last pull's cache answers instead.",
        ),
    ] = True,
    as_json: Json = False,
) -> None:
    """Providers from .dreamrc, first hit wins: --dreamrc, $DREAMRC, walking up from cwd,
    ~/.dreamrc, a control-plane pull (LAKESHORE_URL or a token set), the last pull's
    cache, then nothing."""
    import json
    import shlex

    from dreamlake.engine.contract.errors import DreamlakeError
    from dreamlake.engine.settings.dreamrc import load_dreamrc

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

    from dreamlake.engine.contract.result import json_schema

    if events:
        from dreamlake.engine.contract.events import json_schema as event_schema

        sys.stdout.write(json.dumps(event_schema(), indent=2, sort_keys=True) + "\n")
        return
    sys.stdout.write(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")


@app.command("mcp")
def mcp_cmd(dream_dir: DreamDir = None) -> None:
    """Serve the lifecycle verbs as MCP tools over stdio (install the `mcp` extra)."""
    from .mcp.server import serve

    raise typer.Exit(serve(dream_dir=dream_dir))


@app.command("demo")
def demo_cmd() -> None:
    """Walk a `local` provider from create to connected on this machine, then clean up."""
    from dreamlake.engine.verbs.demo import run_demo

    raise typer.Exit(run_demo())


@app.command("version")
def version_cmd() -> None:
    """Print the engine version."""
    import dreamlake

    sys.stdout.write(f"dreamlake {dreamlake.__version__}\n")


def hoist_verbose(args: list[str]) -> list[str]:
    """``--verbose`` is the root's flag; a terminal user puts it anywhere
    (``dreamlake provider plan -n lab --verbose``): move it to the front. After
    ``--`` everything is an argument, left as given."""
    end = args.index("--") if "--" in args else len(args)
    if "--verbose" not in args[:end]:
        return args
    rest = [a for a in args[:end] if a != "--verbose"]
    return ["--verbose", *rest, *args[end:]]


def main(argv: list[str] | None = None) -> int:
    from .conventions import text_streams

    text_streams()
    args = hoist_verbose(list(sys.argv[1:] if argv is None else argv))
    from .completion import completion_script

    if (shown := completion_script(args, "dreamlake")) is not None:
        return shown
    try:
        rv = app(args=args, prog_name="dreamlake", standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except (typer.Abort, KeyboardInterrupt):
        return interrupted(args)
    except Exception as exc:
        from dreamlake.engine.contract.errors import DreamlakeError

        if isinstance(exc, DreamlakeError):  # e.g. a broken .dreamrc read before the verb ran
            return escaped(exc, args)
        # typer's usage errors (click's UsageError family): bad or missing flags.
        fmt = getattr(exc, "format_message", None)
        if fmt is None or not any(c.__name__ == "UsageError" for c in type(exc).__mro__):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.stdout.write(fmt() + "\n")
            return 0
        return cli_error(fmt(), args)
    if rv == INTERRUPTED:  # typer answers Ctrl-C with 130; no command of ours does
        return interrupted(args)
    return int(rv or 0) if isinstance(rv, int) else 0


plain_help(app)  # every group, those registered above included

if __name__ == "__main__":  # python -m dreamlake.cli.main
    # The imported module is the one the command modules registered on, not __main__.
    from dreamlake.cli.main import main as _registered_main

    raise SystemExit(_registered_main())
