"""``--help`` from the user cache.

A command's help text is a function of the CLI's code, the command asked about and
the width it is wrapped to; rendering it means importing typer, most of what a
``--help`` costs. So the text typer prints is remembered (``engine/settings/usercache.py``,
kind ``help``), one entry per command line and width (``$COLUMNS``, else the
terminal on stdout, else 80, as click finds it), under the size and modification
time of every module of ``dreamlake.cli`` and ``dreamlake.engine``. A later ask
prints the same bytes without typer. Only a help that exited 0 is remembered (an
unknown command's error is typer's to print every time), and nothing while a
module changed within the cache's racy window.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

HELP_FLAGS = ("--help", "-h")
MAX_WORDS = 3  # dreamlake provider status --help: the deepest command path


def help_request(args: list[str]) -> bool:
    """A plain ``[command ...] --help`` line: command words only, the flag last."""
    if not args or args[-1] not in HELP_FLAGS or len(args) > MAX_WORDS + 1:
        return False
    return all(w[:1].isalpha() and w.isascii() and w.replace("-", "").isalnum() for w in args[:-1])


def columns() -> int:
    """The terminal width ``shutil.get_terminal_size`` gives click (without importing
    shutil): ``$COLUMNS``, else stdout's terminal, else 80."""
    try:
        cols = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        cols = 0
    if cols <= 0:
        try:
            cols = os.get_terminal_size(1).columns
        except (AttributeError, ValueError, OSError):
            cols = 0
    return cols if cols > 0 else 80


def show_help(args: list[str], full: Callable[[list[str]], int]) -> int:
    """Print the help ``full(args)`` prints, from the cache when it was printed
    before by this code at this width; the exit code is ``full``'s."""
    import sys

    from dreamlake.engine.settings import usercache

    here = Path(__file__).resolve().parent
    code = usercache.code_stats(here, here.parent / "engine")

    def render() -> dict[str, object]:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = full(args)
        return {"text": out.getvalue(), "exit": rc}

    settled = usercache.settled([[row[-1], row[-1]] for row in code if row[-1] is not None])
    width = columns()
    got = usercache.remembered(
        "help",
        f"{' '.join(args)}\0{width}\0{here}",
        [args, width, code],
        render,
        keep=lambda v: settled and v["exit"] == 0,
    )
    sys.stdout.write(str(got["text"]))
    return int(got["exit"])


__all__ = ["columns", "help_request", "show_help"]
