"""``dreamlake provider create | status | plan | apply | connect``: the first steps
of the lifecycle. Each only parses its flags, calls the engine verb and renders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..completion import backends, provider_names, vendors
from ..groups import provider_app
from ..invoke import announce, call, emit, progress
from ..options import NAME_HELP, DreamDir, Events, Json, NameArg, NameOpt, one_name


@provider_app.command("create")
def create_cmd(
    name_arg: NameArg = None,
    name: Annotated[
        str | None, typer.Option("-n", "--name", help=NAME_HELP, autocompletion=provider_names)
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
            autocompletion=vendors,
        ),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option("--backend", help="terraform (default) or pulumi.", autocompletion=backends),
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
        from .rows import create_from_file

        create_from_file(file, dream_dir, as_json)
    if name is None and name_arg is None:
        raise typer.BadParameter("-n NAME is required (or -f FILE for a provider row)")
    n = one_name(name_arg, name)

    announce("create", n, dream_dir, as_json)
    emit(
        call(
            "create",
            n,
            dream_dir,
            lambda: create(
                n,
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
    name_arg: NameArg = None,
    name: NameOpt = None,
    dream_dir: DreamDir = None,
    as_json: Json = False,
    events: Events = False,
) -> None:
    """Where the provider stands, derived from the world."""
    from dreamlake.engine.verbs.status import status

    n = one_name(name_arg, name)
    announce("status", n, dream_dir, as_json)
    emit(
        call("status", n, dream_dir, lambda: status(n, dream_dir=dream_dir), as_json, events),
        as_json,
    )


@provider_app.command("plan")
def plan_cmd(
    name_arg: NameArg = None,
    name: NameOpt = None,
    dream_dir: DreamDir = None,
    as_json: Json = False,
    events: Events = False,
) -> None:
    """init + validate + plan into a saved plan. Reads and costs nothing."""
    from dreamlake.engine.verbs.plan import plan

    n = one_name(name_arg, name)
    announce("plan", n, dream_dir, as_json)
    emit(
        call(
            "plan",
            n,
            dream_dir,
            lambda: plan(n, dream_dir=dream_dir, progress=progress(as_json)),
            as_json,
            events,
        ),
        as_json,
    )


@provider_app.command("apply")
def apply_cmd(
    name_arg: NameArg = None,
    name: NameOpt = None,
    yes: Annotated[
        bool, typer.Option("-y", "--yes", help="Apply the saved plan. This spends money.")
    ] = False,
    dream_dir: DreamDir = None,
    as_json: Json = False,
    events: Events = False,
) -> None:
    """Apply exactly the saved plan — only with --yes."""
    from dreamlake.engine.verbs.apply import apply

    n = one_name(name_arg, name)
    announce("apply", n, dream_dir, as_json)
    emit(
        call(
            "apply",
            n,
            dream_dir,
            lambda: apply(n, yes=yes, dream_dir=dream_dir, progress=progress(as_json)),
            as_json,
            events,
        ),
        as_json,
    )


@provider_app.command("connect")
def connect_cmd(
    name_arg: NameArg = None,
    name: NameOpt = None,
    host: Annotated[str | None, typer.Option("--host", help="user@host to adopt over SSH.")] = None,
    dream_dir: DreamDir = None,
    as_json: Json = False,
    events: Events = False,
) -> None:
    """Start a daemon that claims the provider, under the best supervisor the host has."""
    from dreamlake.engine.verbs.connect import connect

    n = one_name(name_arg, name)
    announce("connect", n, dream_dir, as_json)
    emit(
        call(
            "connect",
            n,
            dream_dir,
            lambda: connect(n, host=host, dream_dir=dream_dir, progress=progress(as_json)),
            as_json,
            events,
        ),
        as_json,
    )
