"""``tests/cli_fork.py`` answers as ``python -m MODULE`` in a subprocess does: the same
exit code, stdout and stderr kept apart, argv bytes that are not UTF-8, stdin, the
cwd and environment given, and a hang ended by the timeout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_module

CASES = [
    ("dreamlake.cli.main", ["provider", "status", "-n", "lab", "--json"]),  # rc 1, JSON out
    ("dreamlake.cli.main", ["provider", "status", "-n", "lab"]),  # rc 1, prose on stderr
    ("dreamlake.cli.main", ["provider", "status", "--bogus"]),  # a usage error
    ("dreamlake.cli.entry", ["provider", "status", "-n", os.fsdecode(b"l\xffb"), "--json"]),
    ("dreamlake.cli.lakeshore.app", ["namespaces", "list", "--json"]),  # unreachable server
]


@pytest.mark.parametrize(("module", "args"), CASES, ids=[" ".join(a[:3]) for _, a in CASES])
def test_a_forked_run_answers_as_a_subprocess(module: str, args: list[str], project: Path) -> None:
    env = {**os.environ, "LAKESHORE_URL": "http://127.0.0.1:9"}
    real = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=project, env=env, capture_output=True,
        stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    forked = run_module(module, args, cwd=project, env=env, stdin=subprocess.DEVNULL, timeout=120)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        real.returncode,
        real.stdout,
        real.stderr,
    )
    assert real.stdout or real.stderr


def test_cwd_environment_stdin_and_a_timeout(project: Path) -> None:
    code = "import os, sys; print(os.getcwd(), os.environ['X_FORK'], sys.stdin.read())"
    (project / "echo_fork.py").write_text(code + "\nraise SystemExit(3)\n")
    env = {**os.environ, "X_FORK": "here"}
    p = run_module("echo_fork", [], cwd=project, env=env, input=b"fed", text=True, timeout=60)
    assert (p.returncode, p.stdout) == (3, f"{project} here fed\n")  # -m finds it in the cwd
    (project / "hang_fork.py").write_text("import time\ntime.sleep(60)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        run_module("hang_fork", [], cwd=project, stdin=subprocess.DEVNULL, timeout=1)
    (project / "boom_fork.py").write_text("raise RuntimeError('boom')\n")
    p = run_module("boom_fork", [], cwd=project, stdin=subprocess.DEVNULL, text=True, timeout=60)
    assert p.returncode == 1 and "RuntimeError: boom" in p.stderr and p.stdout == ""
