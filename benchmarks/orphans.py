"""Load processes and servers that die with the benchmark that started them.

A benchmark killed with SIGKILL (or a terminal closed under it) runs no clean-up,
so its children would go on: thousands of daemon threads heartbeating, a server
holding its port. :func:`die_with_parent` asks Linux to send SIGKILL to the calling
process when its parent exits (``prctl(PR_SET_PDEATHSIG)``, kept across ``exec``),
and, where that is not available, watches the parent from a thread instead. Call it
first in a ``multiprocessing`` target, or pass it as ``preexec_fn`` to ``Popen``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1


def _prctl_deathsig() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGKILL)


def die_with_parent() -> None:
    """SIGKILL this process when the process that started it exits."""
    parent = os.getppid()
    if _prctl_deathsig():
        if os.getppid() != parent:  # the parent died before the request was made
            os.kill(os.getpid(), signal.SIGKILL)
        return
    threading.Thread(target=_watch, args=(parent,), name="die-with-parent", daemon=True).start()
