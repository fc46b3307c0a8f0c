"""What a path is, in words, when it is not a regular file (pure look-up, no read).

A settings file found as a FIFO, a device such as ``/dev/zero`` or a link to one is
never opened (a FIFO would block, a device never ends); the message says what was
found instead, so a file that was not read is never mistaken for one that is absent.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["not_regular"]

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def not_regular(path: Path | str) -> str | None:
    """What ``path`` is (``"a FIFO (named pipe)"``, ``"a link to /dev/zero, a
    character device"``) when it exists and is not a regular file; None when it is
    a regular file (or a link to one) or does not exist."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    if os.path.islink(path):
        return f"a link to {os.path.realpath(path)}, {what}"
    return what
