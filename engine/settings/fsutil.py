"""Atomic file writes: a reader sees the old file or the new one, never half of one,
and nothing is overwritten unless asked."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def atomic_write(
    path: Path,
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
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    import tempfile  # only when writing: status reads

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
