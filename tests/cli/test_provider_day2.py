"""The day-2 commands through the real ``dreamlake`` executable: ``list`` as a table
and a JSON array, ``delete`` cancelling without a terminal (rc 0) and asking on one
(a real pseudo-terminal), ``destroy`` without ``--yes``."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from cli_fork import run_module

EXE = Path(sys.executable).parent / "dreamlake"
ARGV = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "dreamlake.cli.main"]
GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The console script's ``main`` (``python -m dreamlake.cli.entry``) forked from a
    server with the imports done (``tests/cli_fork.py``): a process of its own; the
    terminal test below starts the installed script itself."""
    return run_module("dreamlake.cli.entry", args, text=True, stdin=subprocess.DEVNULL, timeout=120)


def root(project: Path) -> Path:
    dd = str(project)
    assert (
        run(
            "provider", "create", "-n", "needs", "--provider", "local", "--dream-dir", dd
        ).returncode
        == 0
    )
    assert (
        run(
            "provider", "create", "-n", "ready-to", "--provider", "local", "--dream-dir", dd
        ).returncode
        == 0
    )
    (project / ".dream/providers/ready-to/terraform/terraform.tfvars").write_text(GOOD)
    assert (
        run(
            "provider", "create", "-n", "broken", "--provider", "local", "--dream-dir", dd
        ).returncode
        == 0
    )
    (project / ".dream/providers/broken/provider.json").write_text("[]")
    return project


def test_list_table_and_json(project: Path) -> None:
    dd = str(root(project))
    table = run("provider", "list", "--dream-dir", dd)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("NAME"))
    assert lines[head].split() == ["NAME", "STATUS", "VENDOR", "BACKEND", "CLAIMS", "NEXT"]
    rows = {
        ln.split()[0]: ln.split()
        for ln in lines[head + 1 :]
        if ln and not ln.startswith("degraded")
    }
    assert {n: r[1] for n, r in rows.items()} == {
        "broken": "error",
        "needs": "needs_input",
        "ready-to": "scaffolded",
    }
    assert rows["ready-to"][2:5] == ["local", "terraform", "?"]
    assert f"dreamlake provider plan -n ready-to --dream-dir {dd}" in table.stdout
    assert "degraded: no-lakeshore" in table.stdout

    out = run("provider", "list", "--dream-dir", dd, "--json")
    assert out.returncode == 0
    doc = json.loads(out.stdout)
    assert [d["provider"] for d in doc] == ["broken", "needs", "ready-to"]
    assert [d["status"] for d in doc] == ["error", "needs_input", "scaffolded"]
    assert all("nextAction" in d and d["nextAction"] for d in doc)


def test_list_of_an_empty_root(project: Path) -> None:
    out = run("provider", "list", "--dream-dir", str(project), "--json")
    assert out.returncode == 0 and json.loads(out.stdout) == []
    text = run("provider", "list", "--dream-dir", str(project))
    assert text.returncode == 0 and "no providers" in text.stdout and "next: " in text.stdout


def test_delete_without_a_terminal_cancels_with_rc_0(project: Path) -> None:
    dd = str(root(project))
    out = run("provider", "delete", "-n", "needs", "--dream-dir", dd)
    assert out.returncode == 0, out.stderr
    assert "delete cancelled" in out.stdout and "--yes" in out.stdout
    assert (project / ".dream/providers/needs/provider.json").is_file()
    doc = json.loads(run("provider", "delete", "needs", "--dream-dir", dd, "--json").stdout)
    assert doc["status"] == "needs_input" and doc["nextAction"]["approval"] is True
    done = json.loads(
        run("provider", "delete", "-n", "needs", "--yes", "--dream-dir", dd, "--json").stdout
    )
    assert done["status"] == "exists" and done["files"] == []
    assert not (project / ".dream/providers/needs").exists()


def _on_a_terminal(argv: list[str], answer: bytes) -> tuple[int, str]:
    """Run ``argv`` with stdin/stdout on a pseudo-terminal; answer its question."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec the command on the terminal
        os.execv(argv[0], argv)
    out = b""
    answered = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if not answered and b"[y/N]" in out:
                os.write(fd, answer)
                answered = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def test_delete_on_a_terminal_asks(project: Path) -> None:
    dd = str(root(project))
    argv = [*ARGV, "provider", "delete", "-n", "ready-to", "--dream-dir", dd]
    if not os.path.isabs(argv[0]):
        argv[0] = str(Path(argv[0]).resolve())
    rc, out = _on_a_terminal(argv, b"n\n")
    assert rc == 0 and "Delete provider 'ready-to'" in out and "you answered no" in out, out
    assert (project / ".dream/providers/ready-to").is_dir()
    rc, out = _on_a_terminal(argv, b"y\n")
    assert rc == 0 and "deleted 'ready-to'" in out, out
    assert not (project / ".dream/providers/ready-to").exists()


def test_destroy_without_yes_on_nothing_applied(project: Path) -> None:
    dd = str(root(project))
    out = run("provider", "destroy", "-n", "ready-to", "--dream-dir", dd, "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == 0 and doc["status"] == "scaffolded" and doc["files"] == []
