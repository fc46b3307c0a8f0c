"""Atomic file writes: a reader sees the old file or the new one, never half of one,
and nothing is overwritten unless asked.

Paths are handled as strings with ``os`` (a ``Path`` is taken as well): the apply
the console script starts ahead (``terraform.early_apply``) writes its record
through :func:`atomic_write` before terraform starts, ahead of any ``pathlib``
import (``re``, ``enum``, ``functools``, ``urllib`` and more: some 25 ms of CPU).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from os import PathLike


def atomic_write(
    path: str | PathLike[str],
    data: bytes | str,
    *,
    mode: int | None = None,
    overwrite: bool = True,
    durable: bool = True,
) -> bool:
    """Write ``data`` to ``path`` through a temp file and a rename.

    With ``overwrite=False`` an existing file is left alone and False is returned
    (the final step is a hard link, which fails if the name exists). ``durable=False``
    skips the ``fsync``: for a cache, whose entry a crash may lose or empty (a reader
    then computes it again), never for a user's file.
    """
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or os.curdir, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if overwrite:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        try:  # noqa: SIM105 (no contextlib before terraform's start)
            os.unlink(tmp)
        except FileNotFoundError:
            pass


_TEMP_FLAGS = (
    os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


def _temp_beside(path: str) -> tuple[int, str]:
    """A new file ``.<name>.<random>.tmp`` (mode 0600) in ``path``'s folder, as
    ``tempfile.mkstemp`` makes one, without importing tempfile (and shutil, and the
    compression modules behind it) into every run that writes a record."""
    folder, name = os.path.split(path)
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, _TEMP_FLAGS, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")
