"""The server behind ``tests/cli_fork.py``: import the commands' dependencies once,
then fork a child per request that runs ``python -m MODULE ARGS`` as ``__main__``.

It never runs a command itself, so every child starts from the same state: the
dependencies imported, the command module not (``runpy`` runs it as ``-m`` would,
and its ``__main__`` block imports it by name as it always does). Single-threaded,
so forking is safe. A request is one JSON line with three file descriptors (stdin,
stdout, stderr of the child); the answer is ``{"pid": N}`` at once and ``{"rc": N}``
when the child ends (a signal's death as -N, as subprocess reports it).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import signal
import socket
import sys

PREIMPORT = (
    "typer",
    "typer._adapters",
    "typer._click.decorators",
    "click",
    "pydantic",
    "pydantic.type_adapter",
    "yaml",
    "dreamlake.cli.commands",
    "dreamlake.cli.invoke",
    "dreamlake.cli.progress_view",
    "dreamlake.cli.render",
    "dreamlake.cli.run",
    "dreamlake.cli.lakeshore.registry",
    "dreamlake.cli.lakeshore.launch",
    "dreamlake.cli.lakeshore.capacity",
    "dreamlake.cli.lakeshore.argtext",
    "dreamlake.cli.lakeshore.fleet",
    "dreamlake.cli.lakeshore.options",
    "dreamlake.cli.tracing",
    "dreamlake.controlplane.client",
    "dreamlake.controlplane.connection",
    "dreamlake.controlplane.tlsclient",
    "dreamlake.controlplane.server.settings",
    "ssl",
    "http.client",
    "platformdirs",
    "dreamlake.engine.contract.result",
    "dreamlake.engine.contract.event_model",
    "dreamlake.engine.contract.events",
    "dreamlake.engine.world.rows",
    "dreamlake.engine.verbs.status",
    "dreamlake.engine.verbs.create",
    "dreamlake.engine.scan.terraform",
    "dreamlake.engine.scan.cache",
    "dreamlake.engine.world.scaffold",
    "dreamlake.engine.world.power",
    "dreamlake.engine.daemon.probe",
    "dreamlake.engine.backends.terraform.state",
    "dreamlake.engine.backends.terraform.statefile",
    "dreamlake.engine.backends.terraform.lockinfo",
    "dreamlake.engine.backends.terraform.planfile",
    "dreamlake.engine.world.derive",
    "dreamlake.engine.world.observe",
)


def child(request: dict, fds: list[int], sock: socket.socket) -> None:  # type: ignore[type-arg]
    """In the forked child: become ``python -m MODULE ARGS`` run from ``cwd`` with
    ``env``, and end as that process would. Never returns."""
    import runpy

    sock.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = request["cwd"]  # -m puts the working folder first
    sys.argv = [request["module"], *request["argv"]]
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
        code = -signal.SIGINT if isinstance(exc, KeyboardInterrupt) else 1
    _exit(code)


def _exit(code: object) -> None:
    """End the child as the interpreter ends: threads joined, atexit handlers run,
    a non-integer exit code printed, the streams flushed; then ``os._exit``, which
    skips tearing down the server's modules (nothing a command can see)."""
    import atexit
    import threading

    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    if code is None:
        rc = 0
    elif isinstance(code, int):
        rc = code
    else:
        print(code, file=sys.stderr)
        rc = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            rc = 120
    if rc == -signal.SIGINT:  # an uncaught KeyboardInterrupt: die of the signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(rc & 0xFF)


def serve(sock: socket.socket) -> None:
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        except OSError:
            return
        if not msg:
            return
        while not msg.endswith(b"\n"):
            more = sock.recv(1 << 20)
            if not more:
                return
            msg += more
        request = json.loads(msg)
        pid = os.fork()
        if pid == 0:
            child(request, fds, sock)
        for fd in fds:
            os.close(fd)
        sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        _, status, usage = os.wait4(pid, 0)
        if log := os.environ.get("CLI_FORK_LOG"):  # where the children's CPU went
            with open(log, "a", errors="backslashreplace") as fh:
                cpu = usage.ru_utime + usage.ru_stime
                fh.write(f"{cpu:.3f} {request['module']} {' '.join(request['argv'])[:200]}\n")
        sock.sendall(json.dumps({"rc": os.waitstatus_to_exitcode(status)}).encode() + b"\n")


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    sys.path[0] = os.getcwd()  # not this script's folder; a child puts its cwd here
    for name in PREIMPORT:
        with contextlib.suppress(Exception):  # a broken module fails in the child, as it would
            importlib.import_module(name)
    # What the imports made is left out of every child's collections: a child's
    # collector walks (and so copies) only what the command itself makes.
    gc.collect()
    gc.freeze()
    serve(sock)


if __name__ == "__main__":
    main()
