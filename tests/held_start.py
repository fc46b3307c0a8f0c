"""The console script as its own process (as an agent runs it), held open between
terraform's start ahead (``early.start_plan`` or ``early_apply.start_apply``) and the
rest of the run, then sent a Ctrl-C there: for the tests of an interruption before
the run started ahead is taken."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

# argv: the module, its start function, the file to say the started pids in, then
# dreamlake's own arguments
_HELD_AFTER_START = """
import importlib, sys, time
module, function, said = sys.argv[1:4]
mod = importlib.import_module(module)
real = getattr(mod, function)
def held(name, dream_dir):
    started = real(name, dream_dir)
    pids = [str(a.run.pid) for a in mod._PENDING.values()]
    with open(said, "w") as f:
        f.write(" ".join(pids) if started else "none")
    time.sleep(120)  # the Ctrl-C comes here
    return started
setattr(mod, function, held)
sys.argv = ["dreamlake", *sys.argv[4:]]
from dreamlake.cli.entry import main
sys.exit(main())
"""


def interrupted_after_start(
    module: str,
    function: str,
    argv: list[str],
    cwd: Path,
    said: Path,
    before: Callable[[int], None] | None = None,
) -> tuple[subprocess.Popen[str], str, str, int]:
    """Run ``dreamlake argv`` held after ``module.function`` started terraform, send
    SIGINT once it has (``before(pid)`` first, with terraform's pid), and return the
    finished process, what it printed (stdout, stderr) and terraform's pid."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HELD_AFTER_START, module, function, str(said), *argv],
        cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not said.exists() or not said.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        assert said.read_text() != "none", "nothing was started ahead"
        pid = int(said.read_text())
        if before is not None:
            before(pid)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc, out, err, pid
