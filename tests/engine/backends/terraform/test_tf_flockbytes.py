"""The state lock probe's ``struct flock`` (``flockbytes``, used by ``lockinfo`` and by
``early_apply`` before terraform's start) is packed and read without ``struct``: the
same bytes as ``struct`` with the ``LAYOUT``, both ways."""

from __future__ import annotations

import fcntl
import os
import struct

from dreamlake.engine.backends.terraform.flockbytes import LAYOUT, type_and_pid, whole_file


def test_the_probe_packs_and_reads_struct_flock_as_struct_does() -> None:
    for kind in (fcntl.F_WRLCK, fcntl.F_RDLCK, fcntl.F_UNLCK):
        assert whole_file(kind) == struct.pack(LAYOUT, kind, os.SEEK_SET, 0, 0, 0)
        for pid in (0, 1, 4242, 2**31 - 1):
            answer = struct.pack(LAYOUT, kind, os.SEEK_SET, 7, 9, pid)
            l_type, _, _, _, l_pid = struct.unpack(LAYOUT, answer)
            assert type_and_pid(answer) == (l_type, l_pid)
