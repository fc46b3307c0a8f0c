"""The flags every ``dreamlake`` verb spells the same way, as typer annotations."""

from __future__ import annotations

from typing import Annotated

import typer

from .completion import provider_names

NAME_HELP = "The provider's name (^[a-z0-9][a-z0-9-]*$)."

Name = Annotated[str, typer.Option("-n", "--name", help=NAME_HELP, autocompletion=provider_names)]
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
NameOpt = Annotated[
    str | None, typer.Option("-n", "--name", help=NAME_HELP, autocompletion=provider_names)
]
NameArg = Annotated[
    str | None,
    typer.Argument(
        metavar="NAME",
        help="The provider's name (or use -n).",
        show_default=False,
        autocompletion=provider_names,
    ),
]


def one_name(arg: str | None, opt: str | None) -> str:
    """The provider's name, given as ``-n NAME`` or as the first argument (not both,
    unless they agree): every ``provider`` verb accepts it either way."""
    if arg and opt and arg != opt:
        raise typer.BadParameter(f"two names given: {arg!r} and -n {opt!r}")
    name = opt or arg
    if not name:
        raise typer.BadParameter("a provider name is required: -n NAME (or NAME)")
    return name


def name_problem(name: str, what: str = "provider") -> str | None:
    """Why ``name`` cannot be a provider's (or a pool's) name, else None. The name is
    quoted short: it may be 5,000 characters or not text at all."""
    from dreamlake.engine.world.paths import NAME_MAX, NAME_RE

    if NAME_RE.fullmatch(name):
        return None
    shown = repr(name[:40]) + (f"… ({len(name)} characters)" if len(name) > 40 else "")
    return (
        f"invalid {what} name {shown}: names match ^[a-z0-9][a-z0-9-]*$ (lowercase letters, "
        f"digits and dashes, not starting with a dash), at most {NAME_MAX} characters"
    )
