"""``dreamlake provider suspend | resume | reconcile``: the day-2 lifecycle verbs.

Registered on the ``provider`` group by ``cli.main``; each only parses its flags,
calls the engine verb and renders the result.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..groups import provider_app
from ..invoke import announce, call, cli_error, emit, progress
from ..options import DreamDir, Json, NameArg, NameOpt, one_name

Yes = Annotated[
    bool,
    typer.Option(
        "-y", "--yes", help="Perform the step even when it is gated (it needs a person's yes)."
    ),
]


@provider_app.command("suspend")
def suspend_cmd(
    name_arg: NameArg = None,
    name: NameOpt = None,
    yes: Yes = False,
    timeout: Annotated[
        float,
        typer.Option("--timeout", help="Seconds a running work item may take to finish."),
    ] = 300.0,
    dream_dir: DreamDir = None,
    as_json: Json = False,
) -> None:
    """Stop the provider with its state kept (target_status = suspended, then reconcile)."""
    from dreamlake.engine.verbs.suspend import suspend

    n = one_name(name_arg, name)
    announce("suspend", n, dream_dir, as_json)
    emit(
        call(
            "suspend",
            n,
            dream_dir,
            lambda: suspend(
                n,
                yes=yes,
                dream_dir=dream_dir,
                progress=progress(as_json),
                drain_timeout=timeout,
            ),
        ),
        as_json,
    )


@provider_app.command("resume")
def resume_cmd(
    name_arg: NameArg = None,
    name: NameOpt = None,
    yes: Yes = False,
    dream_dir: DreamDir = None,
    as_json: Json = False,
) -> None:
    """Start the provider again from its kept state (target_status = active, then reconcile)."""
    from dreamlake.engine.verbs.resume import resume

    n = one_name(name_arg, name)
    announce("resume", n, dream_dir, as_json)
    emit(
        call(
            "resume",
            n,
            dream_dir,
            lambda: resume(n, yes=yes, dream_dir=dream_dir, progress=progress(as_json)),
        ),
        as_json,
    )


@provider_app.command("reconcile")
def reconcile_cmd(
    name_arg: NameArg = None,
    name: NameOpt = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Every provider of the root, one after the other.")
    ] = False,
    yes: Yes = False,
    dream_dir: DreamDir = None,
    as_json: Json = False,
) -> None:
    """Move the provider towards its target_status: one planned step, gated steps only with --yes."""
    from dreamlake.engine.verbs.reconcile import reconcile, reconcile_all

    if name_arg is not None or name is not None:
        name = one_name(name_arg, name)
    if all_ == (name is not None):
        from dreamlake.engine.contract import commands
        from dreamlake.engine.world.paths import NAME_RE

        # Keep the target given: never --all (every provider) for one named, nor for
        # none; a name that is not one is never put into a command.
        argv = [*(["-n", name] if name is not None else []), *(["--json"] if as_json else [])]
        command = (
            commands.reconcile(name, dream_dir)
            if name is not None and NAME_RE.fullmatch(name)
            else "dreamlake provider reconcile --help"
        )
        raise typer.Exit(cli_error("give either -n NAME or --all", argv, command=command))
    if name is not None:
        announce("reconcile", name, dream_dir, as_json)
        emit(
            call(
                "reconcile",
                name,
                dream_dir,
                lambda: reconcile(name, yes=yes, dream_dir=dream_dir, progress=progress(as_json)),
            ),
            as_json,
        )
    results = reconcile_all(yes=yes, dream_dir=dream_dir, progress=progress(as_json))
    if as_json:
        import json

        # One shape over every surface: the object MCP's provider_reconcile answers.
        doc = {"providers": [r.to_wire() for r in results]}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        from ..render import render

        if not results:
            sys.stdout.write("no providers under this root: nothing to reconcile\n")
        for r in results:
            sys.stdout.write(render(r) + "\n\n")
    raise typer.Exit(max((r.exit_code for r in results), default=0))
