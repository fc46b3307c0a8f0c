"""The bytes of a Linux ``struct flock`` for ``fcntl(F_GETLK)``, packed and read by
hand: the state lock's probe runs before terraform's start on an apply started ahead
(``early_apply``) and on the apply's last look at the state (``lockinfo``), and
``struct`` is imported for nothing else on either path (a test holds these to
``struct`` with :data:`LAYOUT`)."""

from __future__ import annotations

import os
import sys

LAYOUT = "hhqqi4x"
"""short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid (padded)."""

_ORDER = sys.byteorder  # native, as struct's format without a prefix


def whole_file(kind: int) -> bytes:
    """``struct.pack(LAYOUT, kind, os.SEEK_SET, 0, 0, 0)``: the whole file, from its
    start, any process."""
    head = kind.to_bytes(2, _ORDER, signed=True) + os.SEEK_SET.to_bytes(2, _ORDER, signed=True)
    return head + bytes(4) + bytes(8) + bytes(8) + bytes(4) + bytes(4)


def type_and_pid(answer: bytes) -> tuple[int, int]:
    """``l_type`` and ``l_pid`` of an answered struct flock, as ``struct.unpack(LAYOUT,
    answer)`` reads them (the pid after the two shorts, their padding and the offsets)."""
    return (
        int.from_bytes(answer[:2], _ORDER, signed=True),
        int.from_bytes(answer[24:28], _ORDER, signed=True),
    )
