"""`lakeshore` usage errors in the one error shape, as `dreamlake`'s: `--json` gives
one JSON document (kind `usage`, a `--help` next action), exit code 1 for both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_module

LAKESHORE = [sys.executable, "-m", "dreamlake.cli.lakeshore.app"]
DREAMLAKE = [sys.executable, "-m", "dreamlake.cli.main"]


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS`` forked from a server with the imports done
    (``tests/cli_fork.py``): a process of its own, as a subprocess is."""
    assert argv[:2] == [sys.executable, "-m"], argv
    return run_module(
        argv[2], argv[3:], cwd=cwd, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "LAKESHORE_URL": "http://127.0.0.1:9"},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "help_for"),
    [
        (["providers", "lst"], "lakeshore providers --help"),
        (["providers", "list", "--bogus"], "lakeshore providers list --help"),
        (["namespaces", "add"], "lakeshore namespaces add --help"),  # missing argument
    ],
)
def test_usage_errors_honour_json(tmp_path: Path, args: list[str], help_for: str) -> None:
    out = _run([*LAKESHORE, *args, "--json"], tmp_path)
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    assert doc["kind"] == "usage" and doc["error"]
    assert doc["nextAction"] == {"kind": "run", "command": help_for}
    assert f"next: {help_for}" in out.stderr and "Traceback" not in out.stderr

    prose = _run([*LAKESHORE, *args], tmp_path)
    assert (prose.returncode, prose.stdout) == (1, "")
    assert prose.stderr.startswith("error: ")


def test_both_commands_exit_the_same_on_a_usage_error(tmp_path: Path) -> None:
    ours = _run([*DREAMLAKE, "provider", "status", "--bogus", "--json"], tmp_path)
    theirs = _run([*LAKESHORE, "providers", "list", "--bogus", "--json"], tmp_path)
    assert ours.returncode == theirs.returncode == 1
    assert json.loads(ours.stdout)["kind"] == json.loads(theirs.stdout)["kind"] == "usage"


def test_help_and_no_arguments_still_exit_0(tmp_path: Path) -> None:
    for args in ([], ["--help"], ["providers"]):
        out = _run([*LAKESHORE, *args], tmp_path)
        assert out.returncode == 0 and "Usage: lakeshore" in out.stdout, out.stderr
