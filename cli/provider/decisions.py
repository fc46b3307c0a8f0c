"""``dreamlake provider set -n NAME KEY=VALUE ...``: settle decisions from the
command line (or the MCP tool ``provider_set``), into the provider's own file."""

from __future__ import annotations

from typing import Annotated

import typer

from ..groups import provider_app
from ..invoke import announce, call, emit
from ..options import DreamDir, Json, NameOpt, one_name


@provider_app.command("set")
def set_cmd(
    assignments: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[NAME] KEY=VALUE...",
            help="Decision values, read as each variable's declared type: a number, "
            "true/false, a list as JSON or a,b,c, a map as JSON, else text.",
            show_default=False,
        ),
    ] = None,
    name: NameOpt = None,
    dream_dir: DreamDir = None,
    as_json: Json = False,
) -> None:
    """Set decision values in the provider's own file (terraform.tfvars,
    Pulumi.<name>.yaml or adopt.json), the rest of the file kept; a value the
    decision scan refuses is not written."""
    from dreamlake.engine.contract.errors import DreamlakeError
    from dreamlake.engine.verbs.set_values import parse_assignments, set_values

    words = list(assignments or [])
    positional = words.pop(0) if words and "=" not in words[0] else None
    n = one_name(positional, name)
    announce("set", n, dream_dir, as_json)

    def run():  # type: ignore[no-untyped-def]
        return set_values(n, parse_assignments(words), dream_dir=dream_dir)

    try:
        parse_assignments(words)
    except DreamlakeError as exc:
        raise typer.BadParameter(exc.message) from None
    emit(call("set", n, dream_dir, run, as_json), as_json)
