"""The ``dreamlake`` command's typer groups: the root (``--version``, ``--verbose``)
and ``provider``. Every command module registers its commands on these; the modules
that only read the tree (``cli/commands.py``, the MCP server) import it from there."""

from __future__ import annotations

from typing import Annotated

import typer

from .conventions import HELP_OPTIONS, setup_logging, version_callback

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
    help="Lifecycle of one provider: create, set, plan, apply, connect, status; day 2: suspend, "
    "resume, reconcile, watch, drift, destroy, delete, list; its control-plane row: create -f, "
    "show, update.",
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
