"""terraform runs started without waiting for them: the runner's (``runner``) for a
run whose reader is not ready yet, the plan the console script starts ahead of the
rest of ``plan`` (``early``). A leaf (the standard library and ``executable``): it
is imported before the rest of the run is.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from .executable import exec_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from .runner import Completed


class Started:
    """A terraform run started without waiting for it (:func:`start`): its output is
    read, and its exit logged, by :meth:`finish`."""

    def __init__(self, argv: list[str], cwd: Path, proc: subprocess.Popen[str]) -> None:
        from ...settings.trace import traced

        self.argv = argv
        self.pid = proc.pid
        self._proc = proc
        self._trace = traced(argv, cwd)
        self._timing = self._trace.__enter__()

    def finish(self) -> Completed:
        """Wait for the run and read what it printed."""
        from .runner import Completed

        stdout, stderr = self._proc.communicate()
        self._timing.returncode = self._proc.returncode
        self._trace.__exit__(None, None, None)
        return Completed(self.argv, self._proc.returncode, stdout or "", stderr or "")

    def interrupt(self) -> Completed:
        """Stop the run as a person's Ctrl-C does (terraform stops its providers and
        releases its lock itself), then :meth:`finish`."""
        if self._proc.poll() is None:
            import signal

            with contextlib.suppress(OSError):  # it ended meanwhile
                self._proc.send_signal(signal.SIGINT)
        return self.finish()


_PIPE_SIZE = 1 << 20  # Linux lets a pipe grow to this: a long stream seldom waits for its reader


def start(args: Sequence[str], *, cwd: Path, binary: str, env: Mapping[str, str]) -> Started:
    """Start ``terraform <args>`` in ``cwd`` and return at once; stdout and stderr are
    read when :meth:`Started.finish` is called (raises ``OSError`` when the binary
    cannot be started). For a run started before its reader is ready: the plan the
    console script starts ahead of the rest of ``plan`` (``early``)."""
    argv = [binary, *args]
    proc = subprocess.Popen(
        argv,
        executable=exec_path(binary),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    import fcntl

    grow = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    if grow is not None and proc.stdout is not None:
        with contextlib.suppress(OSError):  # a lower limit: the stream waits for its reader
            fcntl.fcntl(proc.stdout.fileno(), grow, _PIPE_SIZE)
    return Started(argv, cwd, proc)


__all__ = ["Started", "start"]
