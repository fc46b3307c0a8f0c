"""terraform runs started without waiting for them: the plan (``early``) and the
apply (``early_apply``) the console script starts ahead of the rest of the run. A
leaf (``os`` and ``executable``): it is imported before the rest of the run is,
and it imports nothing the interpreter has not loaded at its start (no
``contextlib``, no ``pathlib``: a folder is any ``os`` path) before terraform starts.

The process is started with ``os.posix_spawn`` (the C library's ``vfork`` and
``exec``), not ``subprocess``, whose import (``signal``, ``threading``,
``selectors``, ``locale`` and more: 5-10 ms of CPU here) came before terraform's
start. It is started as ``subprocess.Popen(..., cwd=..., env=..., stdin=DEVNULL,
stdout=PIPE, stderr=PIPE, text=True)`` starts it: the same ``argv[0]`` and file
executed, the working directory, the environment, ``SIGPIPE`` and ``SIGXFSZ`` as
their defaults, no descriptor of this process inherited but the three; what it
printed is read as that text (the locale's encoding, universal newlines). One
difference: glibc's ``posix_spawn`` leaves its two internal signals (32 and 33)
ignored in the child, as CPython's own ``subprocess`` does wherever it spawns this
way; neither terraform nor its plugins use them.
"""

from __future__ import annotations

import os

from .executable import exec_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from os import PathLike

    from .runner import Completed


class Started:
    """A terraform run started without waiting for it (:func:`start`): its output is
    read, and its exit logged, by :meth:`finish`."""

    def __init__(
        self, argv: list[str], cwd: str | PathLike[str], pid: int, out: int, err: int
    ) -> None:
        self.argv = argv
        self.pid = pid
        self.returncode: int | None = None
        self._open = [out, err]
        self._read: dict[int, list[bytes]] = {out: [], err: []}
        self._out, self._err = out, err
        self._done: Completed | None = None
        self._cwd = os.fspath(cwd)  # as the trace names it: a Path spells the same
        self._trace: object = None
        self._timing: object = None

    def traced(self) -> None:
        """Its line in the subprocess log (``settings.trace``), once it has started."""
        from ...settings.trace import traced

        trace = traced(self.argv, self._cwd)
        self._timing, self._trace = trace.__enter__(), trace

    def poll(self) -> int | None:
        """Its exit code once it has exited (as ``Popen.poll``), else None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def finish(self) -> Completed:
        """Wait for the run and read what it printed. Interrupted (Ctrl-C), what was
        read is kept: called again, it goes on where it stopped."""
        if self._done is not None:
            return self._done
        from .runner import Completed

        self._drain()
        if self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:  # reaped elsewhere: its code is not known
                self.returncode = 0 if self.returncode is None else self.returncode
        timing, trace = self._timing, self._trace
        if trace is not None:
            timing.returncode = self.returncode  # type: ignore[attr-defined]
            trace.__exit__(None, None, None)  # type: ignore[attr-defined]
        self._done = Completed(
            self.argv, self.returncode, _text(self._read[self._out]), _text(self._read[self._err])
        )
        return self._done

    def _drain(self) -> None:
        """Read stdout and stderr to their ends (neither fills while the other is read)."""
        import select

        poller = select.poll()
        for fd in self._open:
            poller.register(fd, select.POLLIN)
        while self._open:
            for fd, _ in poller.poll():
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    self._read[fd].append(chunk)
                    continue
                poller.unregister(fd)
                self._open.remove(fd)
                os.close(fd)

    def interrupt(self) -> Completed:
        """Stop the run as a person's Ctrl-C does (terraform stops its providers and
        releases its lock itself), then :meth:`finish`."""
        if self.poll() is None:
            try:  # noqa: SIM105 (no contextlib before terraform's start)
                os.kill(self.pid, _SIGINT)
            except OSError:  # it ended meanwhile
                pass
        return self.finish()


def _text(chunks: list[bytes]) -> str:
    """What ``Popen(text=True)`` reads: the locale's encoding, universal newlines."""
    import io

    with io.TextIOWrapper(io.BytesIO(b"".join(chunks))) as f:
        return f.read()


_PIPE_SIZE = 1 << 20  # Linux lets a pipe grow to this: a long stream seldom waits for its reader
try:
    import _signal  # built in: the signal module's Python part is not needed

    _SIGINT = int(_signal.SIGINT)
    _DEFAULTED: tuple[int, ...] = (int(_signal.SIGPIPE), int(_signal.SIGXFSZ))  # restore_signals
except (ImportError, AttributeError):  # pragma: no cover - not a POSIX system
    _signal = None
    _SIGINT, _DEFAULTED = 2, ()


def start(
    args: Sequence[str],
    *,
    cwd: str | PathLike[str],
    binary: str,
    env: Mapping[str, str],
    then: Callable[[Started], None] | None = None,
) -> Started:
    """Start ``terraform <args>`` in ``cwd`` and return at once; stdout and stderr are
    read when :meth:`Started.finish` is called (raises ``OSError`` when the binary
    cannot be started). ``then(run)`` is called with the run before a Ctrl-C that
    came meanwhile is raised: the caller records the run first, so that an
    interruption always finds it (and waits for it). SIGINT is blocked in this
    thread meanwhile, which holds a Ctrl-C back where no other thread could take
    it, as in the console script, which starts a run before it starts any thread."""
    argv = [binary, *args]
    mask = None
    if _signal is not None:
        mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})
    try:
        out_r, out_w = os.pipe()  # not inherited: only their copies onto 1 and 2 are
        err_r, err_w = os.pipe()
        try:
            pid = _spawn(exec_path(binary), argv, cwd, env, out_w, err_w, mask)
        except BaseException:
            for fd in (out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (out_w, err_w):
                os.close(fd)
        run = Started(argv, cwd, pid, out_r, err_r)
        if then is not None:
            then(run)
    finally:
        if mask is not None:
            _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)
    _grow(out_r)
    run.traced()
    return run


def _spawn(
    path: str,
    argv: list[str],
    cwd: str | PathLike[str],
    env: Mapping[str, str],
    out: int,
    err: int,
    mask: object,
) -> int:
    """``posix_spawn`` in ``cwd`` (this process's working directory is that folder
    for the call, and its own again after: no thread runs yet, and a Ctrl-C is held
    back), stdin from ``/dev/null``, stdout and stderr to the pipes."""
    if min(out, err) <= 2:  # a standard stream of ours was closed: not this way
        raise OSError("a standard stream is closed")
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, out, 1),
        (os.POSIX_SPAWN_DUP2, err, 2),
    ]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited()]
    here = os.open(".", os.O_PATH | os.O_DIRECTORY)
    try:
        os.chdir(cwd)
        try:
            return os.posix_spawn(
                path,
                argv,
                dict(env),
                file_actions=actions,
                setsigdef=_DEFAULTED,
                **({"setsigmask": mask} if mask is not None else {}),  # type: ignore[arg-type]
            )
        finally:
            os.fchdir(here)
    finally:
        os.close(here)


def _inherited() -> list[int]:
    """This process's descriptors past the standard three a child would inherit
    (``Popen``'s ``close_fds``: closed in the child)."""
    found: list[int] = []
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return found
    for name in names:
        fd = int(name)
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # the listing's own descriptor, closed since
                pass
    return found


def _grow(fd: int) -> None:
    import fcntl

    grow = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    if grow is not None:
        try:  # noqa: SIM105 (no contextlib before terraform's start)
            fcntl.fcntl(fd, grow, _PIPE_SIZE)
        except OSError:  # a lower limit: the stream waits for its reader
            pass


__all__ = ["Started", "start"]
