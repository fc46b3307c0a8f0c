"""``python -m <command module> ARGS`` as a real process, without paying for Python's
start and the command's imports each time.

Tests that run a command dozens of times with different files or flags spend most
of their time starting the interpreter and importing typer and pydantic (about
0.6 s of CPU a run), not in the command. ``run_module`` gives the same answer as
``subprocess.run([sys.executable, "-m", module, *args], ...)``: a server process
(one per test process and set of the variables Python reads at start) imports the
command's dependencies once, then forks a child per call; the child takes the
caller's stdin, stdout and stderr (real pipes, passed over a Unix socket), cwd,
environment and argv, and runs the module as ``__main__`` with ``runpy``, as
``-m`` does. Its exit code, its two streams kept apart, a hang ended by the
timeout, files it leaves behind: all as a subprocess's (``tests/test_cli_fork.py``
compares the two byte for byte). What it does not cover is the interpreter's start,
what a module reads from the environment while it is imported, and the installed
script: the tests of the entry points (``tests/cli/test_entry.py``,
``tests/test_packaging.py``) and one real subprocess per command family keep those.

The server (``cli_fork_server.py``) is started on first use and ends with the test
process.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SERVER = Path(__file__).with_name("cli_fork_server.py")
# Environment variables Python reads at start: a server is started for each set of
# them a caller asks for, since a forked child does not start again.
_START_ENV = ("PYTHON", "LANG", "LC_")

_lock = threading.Lock()
_servers: dict[tuple[tuple[str, str], ...], tuple[subprocess.Popen[bytes], socket.socket]] = {}


def _start(env: Mapping[str, str]) -> tuple[subprocess.Popen[bytes], socket.socket]:
    key = tuple(sorted((k, v) for k, v in env.items() if k.startswith(_START_ENV)))
    running = _servers.get(key)
    if running is not None and running[0].poll() is None:
        return running
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), str(theirs.fileno())],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        pass_fds=(theirs.fileno(),),
        env=dict(env),
    )
    theirs.close()
    _servers[key] = (proc, ours)
    return proc, ours


@atexit.register
def _stop() -> None:
    for _, sock in _servers.values():
        sock.close()  # the server ends on EOF
    for proc, _ in _servers.values():
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
    _servers.clear()


def _recv_line(sock: socket.socket) -> dict[str, Any]:
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = sock.recv(4096)
        if not chunk:
            raise RuntimeError("the CLI fork server ended")
        buf += chunk
    return json.loads(buf)  # type: ignore[no-any-return]


def run_module(
    module: str,
    args: Sequence[str | bytes],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | str | None = None,
    stdin: int | None = None,
    timeout: float | None = None,
    text: bool = False,
    check: bool = False,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run([sys.executable, "-m", module, *args], capture_output=True, ...)``
    answered by a forked child of the server (see the module's docstring)."""
    full_env = dict(os.environ if env is None else env)
    argv = [os.fsdecode(a) if isinstance(a, bytes) else a for a in args]
    if isinstance(input, str):
        input = input.encode()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r = in_w = None
    if input is not None:
        in_r, in_w = os.pipe()
        child_in = in_r
    elif stdin == subprocess.DEVNULL:
        child_in = os.open(os.devnull, os.O_RDONLY)
    else:
        child_in = os.dup(0 if stdin is None else stdin)
    request = {
        "module": module,
        "argv": argv,
        "cwd": str(Path(cwd if cwd is not None else os.getcwd()).resolve()),
        "env": full_env,
    }
    with _lock:
        _, sock = _start(full_env)
        try:
            socket.send_fds(
                sock, [json.dumps(request, ensure_ascii=True).encode() + b"\n"],
                [child_in, out_w, err_w],
            )  # fmt: skip
        finally:
            for fd in (child_in, out_w, err_w):
                os.close(fd)
        pid = int(_recv_line(sock)["pid"])
        try:
            out, err, timed_out = _collect(out_r, err_r, in_w, input, timeout)
        except BaseException:
            os.kill(pid, signal.SIGKILL)
            _recv_line(sock)
            raise
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        rc = int(_recv_line(sock)["rc"])
    stdout: Any = out
    stderr: Any = err
    if text:  # as subprocess decodes: strict, universal newlines
        stdout = out.decode().replace("\r\n", "\n").replace("\r", "\n")
        stderr = err.decode().replace("\r\n", "\n").replace("\r", "\n")
    cmd = [sys.executable, "-m", module, *args]
    if timed_out:
        raise subprocess.TimeoutExpired(cmd, timeout or 0, output=stdout, stderr=stderr)
    done = subprocess.CompletedProcess(cmd, rc, stdout, stderr)
    if check:
        done.check_returncode()
    return done


def _collect(
    out_r: int, err_r: int, in_w: int | None, data: bytes | None, timeout: float | None
) -> tuple[bytes, bytes, bool]:
    """Both streams until EOF (and ``data`` written to stdin), as ``communicate`` does."""
    deadline = None if timeout is None else time.monotonic() + timeout
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    sel = selectors.DefaultSelector()
    sel.register(out_r, selectors.EVENT_READ)
    sel.register(err_r, selectors.EVENT_READ)
    pending = memoryview(data or b"")
    if in_w is not None:
        if pending:
            os.set_blocking(in_w, False)
            sel.register(in_w, selectors.EVENT_WRITE)
        else:
            os.close(in_w)
            in_w = None
    readers = {out_r, err_r}
    try:
        while readers:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return b"".join(chunks[out_r]), b"".join(chunks[err_r]), True
            for key, _ in sel.select(left):
                fd = int(key.fd)
                if fd == in_w:
                    try:
                        n = os.write(fd, pending[:65536])
                    except BrokenPipeError:
                        n = len(pending)
                    pending = pending[n:]
                    if not pending:
                        sel.unregister(fd)
                        os.close(fd)
                        in_w = None
                    continue
                chunk = os.read(fd, 65536)
                if chunk:
                    chunks[fd].append(chunk)
                else:
                    sel.unregister(fd)
                    readers.discard(fd)
    finally:
        sel.close()
        for fd in (out_r, err_r, in_w):
            if fd is not None:
                os.close(fd)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r]), False
