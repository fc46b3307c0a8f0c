"""Arguments that are not UTF-8 text, refused before any command runs.

Python hands a command-line argument made of bytes that are not UTF-8 (a name typed
in a Latin-1 shell) over as a string with lone surrogates, which no URL, JSON body or
answer can carry. ``lakeshore`` names such an argument and stops, exit 1, instead of
failing half-way with a traceback. The value of a file or directory option (a path
may be any bytes) and an ``LAKESHORE_*_FILE`` / ``_DIR`` variable are left alone:
they are opened, never sent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from dreamlake.controlplane.text import encodable

PATH_OPTIONS = ("--write",)
"""Options whose value is a path, besides every ``--*-file`` and ``--*-dir``."""


def _is_path_option(arg: str) -> bool:
    name = arg.split("=", 1)[0]
    return name.startswith("--") and (name.endswith(("-file", "-dir")) or name in PATH_OPTIONS)


def shown(text: str) -> str:
    """``text`` as the bytes it came from, those that are not UTF-8 as ``\\xe9``."""
    return os.fsencode(text).decode("utf-8", "backslashreplace")


def first_non_utf8(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """What to say about the first argument (or ``LAKESHORE_*`` variable) that is not
    UTF-8 text, or None when all are."""
    after_path_option = False
    for i, arg in enumerate(argv, start=1):
        if after_path_option:
            after_path_option = False
            continue
        if _is_path_option(arg):
            after_path_option = "=" not in arg
            continue
        if not encodable(arg):
            return f"argument {i} ('{shown(arg)}') is not UTF-8 text"
    for name, value in sorted(env.items()):
        if not name.startswith("LAKESHORE_") or name.endswith(("_FILE", "_DIR")):
            continue
        if not encodable(value):
            return f"{name} ('{shown(value)}') is not UTF-8 text"
    return None


def refuse_non_utf8(argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    """End the process (exit 1, the one error shape) when an argument is not UTF-8."""
    what = first_non_utf8(argv, os.environ if env is None else env)
    if what is None:
        return
    import typer

    from .common import fail

    try:
        fail(
            f"{what}: lakeshore sends names and values to the control plane as UTF-8",
            "spell it in UTF-8 (a shell whose locale is UTF-8, LANG=C.UTF-8, types it so)",
            kind="usage",
        )
    except typer.Exit as exc:  # no command runs yet to turn it into the exit code
        raise SystemExit(exc.exit_code) from None
