"""The command being run, again with one option changed: what a next action names
(``--server`` for an untrusted or wrong-scheme server, ``--token-file`` for a refused
token), and the data dir it names, where this machine's admin token and CA are."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

__all__ = ["command", "data_dir", "with_option"]


def with_option(option: str, value: str) -> list[str] | None:
    """This command's arguments with ``option``'s value replaced by ``value``
    (``--opt V`` or ``--opt=V``), or None when it does not give that option."""
    argv = list(sys.argv[1:])
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            argv[i + 1] = value
            return argv
        if arg.startswith(option + "="):
            argv[i] = f"{option}={value}"
            return argv
    return None


def command(argv: list[str]) -> str:
    """``lakeshore`` with ``argv``, quoted for a shell."""
    return "lakeshore " + shlex.join(argv)


def data_dir() -> Path:
    """The data dir this command names (``--data-dir``), else the server's default
    (``LAKESHORE_DATA_DIR``, else the user data dir)."""
    from dreamlake.controlplane.server.settings import default_data_dir

    found: Path | str = default_data_dir()
    argv = sys.argv
    for i, arg in enumerate(argv):
        if arg == "--data-dir" and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--data-dir="):
            found = arg.split("=", 1)[1]
    return Path(found).expanduser()
