"""Bounded readers for every file the tools read: text, JSON, HCL (YAML is in
``yamlload``).

A file that is too large, not UTF-8, nested too deeply or not parseable raises
``FileProblem`` — a ``ValueError`` (so the readers' existing ``except ValueError``
handlers keep working) that names the file and says what is wrong. ``as_error``
turns one into the engine's typed error whose next action points at the file.
Nothing here can hang or run out of stack on a hostile file.
"""

from __future__ import annotations

import json
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

    from ..contract.errors import DreamlakeError

MAX_TEXT = 8 * 1024 * 1024
"""Settings, templates, tfvars, lock files, plan records: far below this."""
MAX_STATE = 256 * 1024 * 1024
"""terraform.tfstate and Pulumi checkpoints of large accounts."""
MAX_DEPTH = 128
"""Nesting of JSON objects and arrays (terraform state nests well below 40)."""


class FileProblem(ValueError):
    """``path`` cannot be used; ``reason`` says why in words for a person."""

    def __init__(self, path: Path | str | None, reason: str) -> None:
        self.path = Path(path) if path is not None else None
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path is not None else reason)


NOT_REGULAR = (
    "is not a regular file (a FIFO, a device or a socket, or a link to one); "
    "put the file itself there"
)


def read_bytes(path: Path | str, *, limit: int = MAX_TEXT) -> bytes:
    """At most ``limit`` bytes of ``path``; larger is a ``FileProblem``. Only a
    regular file is read: it is opened without blocking (a FIFO with no writer would
    otherwise wait forever) and anything else — a FIFO, a device such as
    ``/dev/zero``, a socket, a link to one — is a ``FileProblem`` too. ``OSError``
    (missing, unreadable, a folder) passes through for callers that expect it."""
    import errno
    import os
    import stat

    p = Path(path)
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(p))
        if not stat.S_ISREG(mode):
            raise FileProblem(p, NOT_REGULAR)
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise FileProblem(p, f"larger than {_size(limit)}; is it the right file?")
    return data


def is_regular(path: Path | str) -> bool:
    """Whether ``path`` is a regular file (following links), without opening it."""
    import os
    import stat

    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def decode(data: bytes, path: Path | str | None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(
            path, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def read_text(path: Path | str, *, limit: int = MAX_TEXT) -> str:
    """The UTF-8 text of ``path``, at most ``limit`` bytes."""
    return decode(read_bytes(path, limit=limit), path)


def loads_json(
    text: str | bytes, *, path: Path | str | None = None, max_depth: int | None = MAX_DEPTH
) -> Any:
    """``json.loads`` that refuses documents nested deeper than ``max_depth``.
    ``None`` (large state files, read whole on every status): no pre-scan, only the
    parser's own recursion guard, which fails fast too."""
    if isinstance(text, bytes):
        text = decode(text, path)
    if max_depth is not None:
        check_json_depth(text, path, max_depth)
    try:
        return json.loads(text)
    except RecursionError:
        raise FileProblem(path, "nested too deeply to read") from None
    except ValueError as exc:
        raise FileProblem(path, f"not valid JSON: {exc}") from None


def read_json(path: Path | str, *, limit: int = MAX_TEXT, max_depth: int | None = MAX_DEPTH) -> Any:
    return loads_json(read_bytes(path, limit=limit), path=path, max_depth=max_depth)


def check_json_depth(text: str, path: Path | str | None, max_depth: int = MAX_DEPTH) -> None:
    """A quick scan of bracket nesting outside strings, before the recursive parser."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    depth = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                raise FileProblem(path, f"nested deeper than {max_depth} levels")
        elif ch in "]}":
            depth -= 1


def check_hcl_text(text: str, path: Path | str | None, max_depth: int = MAX_DEPTH) -> None:
    """HCL's parser recurses per nesting level: refuse what would exhaust it."""
    depth = 0
    deepest = 0
    for ch in text:
        if ch in "[{(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]})":
            depth = max(0, depth - 1)
    if deepest > max_depth:
        raise FileProblem(path, f"nested deeper than {max_depth} levels")


def as_error(
    problem: FileProblem | OSError,
    command: str | None,
    *,
    path: Path | str | None = None,
    kind: str = "unreadable_file",
    what: str = "",
) -> DreamlakeError:
    """The typed error for a file that cannot be read: the file named in the message
    (and in ``.path``), and a next action to fix that file and then run ``command``
    (``None``: the verb that catches it picks the command)."""
    from ..contract.errors import DreamlakeError
    from ..contract.result import EditThenContinue

    where = (
        path
        if path is not None
        else getattr(problem, "path", None) or getattr(problem, "filename", None)
    )
    if isinstance(problem, FileProblem):
        reason = problem.reason
    else:
        reason = f"cannot read it: {problem.strerror or problem}"
    label = f"{what} {where}" if what else f"{where}"
    err = DreamlakeError(
        f"{label.strip()}: {reason}",
        kind=kind,
        next_action=EditThenContinue(file=str(where), command=command)
        if where and command is not None
        else None,
    )
    err.path = Path(where) if where else None  # type: ignore[attr-defined]
    return err


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n} bytes"
