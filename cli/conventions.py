"""What every command of ours does the way typer and click users expect: ``-h`` beside
``--help``, ``--version``, help text shown as written (a regex like
``^[a-z0-9][a-z0-9-]*$`` is not rich markup), and ``--verbose`` / ``DREAMLAKE_LOG``.
Imports nothing heavy: it runs on every command's start."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

HELP_OPTIONS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}
LOG_ENV = "DREAMLAKE_LOG"


def plain_help(app: Any) -> None:
    """Show help text as written, on ``app`` and every sub-app mounted on it (rich
    markup would eat ``[a-z0-9]`` and print ``(^*$)``)."""
    app.rich_markup_mode = None
    for group in getattr(app, "registered_groups", []):
        if group.typer_instance is not None:
            plain_help(group.typer_instance)


def version_callback(prog: str) -> Callable[[bool], None]:
    def show(value: bool) -> None:
        if value:
            import typer

            import dreamlake

            sys.stdout.write(f"{prog} {dreamlake.__version__}\n")
            raise typer.Exit(0)

    return show


def setup_logging(verbose: bool) -> None:
    """``--verbose`` or ``DREAMLAKE_LOG=debug``: subprocess command lines and timings
    (and any other debug record of the engine) on stderr; stdout stays the result.
    ``DREAMLAKE_LOG`` also takes ``info`` / ``warning``."""
    level_name = "debug" if verbose else os.environ.get(LOG_ENV, "").strip().lower()
    if level_name not in ("debug", "info", "warning"):
        return
    import logging  # only when asked for: every command pays its import otherwise

    level = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}[level_name]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("dreamlake: %(message)s"))
    log = logging.getLogger("dreamlake")
    log.handlers = [handler]
    log.setLevel(level)
    log.propagate = False


def text_streams() -> None:
    """stdout and stderr always carry UTF-8 text: a name given as bytes that are not
    UTF-8 is echoed with U+FFFD where it cannot be encoded (never as raw bytes, which
    would make the --json document not JSON, nor as a UnicodeEncodeError)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "strict") != "replace":
            import contextlib

            with contextlib.suppress(ValueError, OSError):  # a stream that cannot change
                reconfigure(errors="replace")
