"""Paths as strings, spelled and checked as ``pathlib`` spells and checks them.

The plan and the apply the console script starts ahead (``early``, ``early_apply``)
start terraform before anything imports ``pathlib``: that import (``re``, ``enum``,
``functools``, ``collections``, ``urllib`` and more) took some 25 ms of CPU here,
about as much as the rest of the way to terraform's start. Those modules work on
``os.path`` strings instead; where a name they compute is compared with one the
engine wrote from its ``Path`` objects (the ahead record's settings files), these
spell it as ``str(Path(...))`` does, and where ``Path.exists`` / ``is_file`` raise
(a folder that may not be read), so do these: nothing then starts ahead.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from os import PathLike


def lexical(path: str) -> str:
    """``str(Path(path))``: no empty or ``.`` parts, no trailing ``/`` (``..`` kept)."""
    root = "/" if path.startswith("/") else ""
    if path.startswith("//") and not path.startswith("///"):
        root = "//"  # POSIX leaves its meaning to the system; pathlib keeps it
    return root + "/".join(p for p in path.split("/") if p not in ("", ".")) or "."


def expanduser(path: str) -> str:
    """``Path(path).expanduser()`` of a path spelled as :func:`lexical` spells it:
    raises ``RuntimeError`` where no home is found."""
    out = os.path.expanduser(path)
    if out.startswith("~"):
        raise RuntimeError("Could not determine home directory.")
    return out


def join(path: str, *more: str) -> str:
    """``str(Path(path, *more))``."""
    return lexical(os.path.join(path, *more))


def up(path: str) -> list[str]:
    """``[path, *Path(path).parents]`` for a path spelled as :func:`lexical` spells it."""
    out = [path]
    while (parent := os.path.dirname(out[-1]) or ".") != out[-1]:
        out.append(parent)
    return out


def _stat(path: str) -> os.stat_result | None:
    """``os.stat``; None where ``Path.exists`` says False (no such file, a name on the
    way not a folder, a link loop, a name the system cannot take), raising otherwise."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        import errno

        if exc.errno in (errno.EBADF, errno.ELOOP):
            return None
        raise
    except ValueError:
        return None


def exists(path: str) -> bool:
    """``Path(path).exists()``."""
    return _stat(path) is not None


def is_file(path: str) -> bool:
    """``Path(path).is_file()``."""
    st = _stat(path)
    return st is not None and (st.st_mode & 0o170000) == 0o100000  # stat.S_ISREG


def unlink(path: str | PathLike[str]) -> None:
    """``Path(path).unlink(missing_ok=True)``."""
    try:  # noqa: SIM105 (no contextlib before terraform's start)
        os.unlink(path)
    except FileNotFoundError:
        pass


__all__ = ["exists", "expanduser", "is_file", "join", "lexical", "unlink", "up"]
