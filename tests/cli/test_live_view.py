"""The live progress view for a person at a terminal: the state it folds from the
events (pure), when it is drawn at all, and the real thing in a tmux pane showing
the elapsed times of resources in flight going up while terraform applies."""

from __future__ import annotations

import io
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dreamlake.cli.progress_view import LiveState, wants_live
from dreamlake.engine.backends.terraform.binaries import at_least, available
from dreamlake.engine.contract.events import ProgressEvent

DREAMLAKE = Path(sys.executable).parent / "dreamlake"


def ev(type: str, seq: int, **kw: object) -> ProgressEvent:
    return ProgressEvent(type=type, seq=seq, elapsed=0.0, verb="apply", provider="p", **kw)  # type: ignore[arg-type]


def test_state_counts_resources_in_flight_and_done() -> None:
    st = LiveState("apply", "p")
    assert st.fold(ev("step", 1, step="apply", message="terraform apply", total=2)) == (
        "· terraform apply"
    )
    st.fold(ev("resource_start", 2, address="a.one", action="create"))
    st.fold(ev("resource_start", 3, address="a.two", action="delete"))
    lines = st.lines()
    assert lines[0].startswith("apply p ") and lines[0].endswith("0/2 done")
    assert any(re.fullmatch(r"    creating a\.one  \d+\.\ds", ln) for ln in lines), lines
    assert any(ln.startswith("    destroying a.two") for ln in lines), lines
    kept = st.fold(ev("resource_done", 4, address="a.one", action="create", resource_elapsed=3.0))
    assert kept == "✓ a.one created (3.0s)"
    assert st.fold(ev("resource_failed", 5, address="a.two", action="delete")) is not None
    lines = st.lines()
    assert lines[0].endswith("1/2 done, 1 failed") and not any("a.one" in ln for ln in lines)


def test_total_falls_back_to_the_planned_resources() -> None:
    st = LiveState("plan", "p")
    st.fold(ev("resource_planned", 1, address="x.a", action="create"))
    st.fold(ev("resource_planned", 2, address="x.b", action="create"))
    assert st.lines()[0].endswith("0/2 done")


def test_live_only_for_prose_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("DREAMLAKE_NO_LIVE", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert wants_live(False, Tty())
    assert not wants_live(True, Tty())  # --json: never
    assert not wants_live(False, io.StringIO())  # a pipe: plain lines
    assert not wants_live(False, io.StringIO(), Tty())  # stdout piped, stderr a terminal
    monkeypatch.setenv("TERM", "dumb")
    assert not wants_live(False, Tty())


MODERN = [(v, p) for v, p in available() if at_least(v, "1.4.0")]

SLOW_TF = """
resource "terraform_data" "slow" {
  count = 2
  provisioner "local-exec" {
    command = "sleep 5"
  }
}
"""


def _planned_project(root: Path, env: dict[str, str]) -> None:
    def dl(*args: str) -> None:
        subprocess.run(
            [str(DREAMLAKE), "provider", *args, "--json"],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=300,
            check=True,
        )

    dl("create", "-n", "lv", "--provider", "local")
    tf = root / ".dream" / "providers" / "lv" / "terraform"
    (tf / "terraform.tfvars").write_text(
        f'workdir = "{root / "work"}"\nqueues = ["default"]\nworker_name = "lv-1"\n'
    )
    (tf / "slow.tf").write_text(SLOW_TF)
    dl("plan", "-n", "lv")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
@pytest.mark.skipif(not MODERN, reason="needs a terraform binary >= 1.4 (terraform_data)")
@pytest.mark.skipif(not DREAMLAKE.is_file(), reason=f"needs the console script {DREAMLAKE}")
def test_live_view_in_a_terminal_shows_elapsed_times_going_up(project: Path) -> None:
    env = dict(os.environ, TERRAFORM_BINARY=MODERN[-1][1], TF_CLI_CONFIG_FILE=os.devnull)
    env.pop("DREAMLAKE_NO_LIVE", None)
    env["TERM"] = "xterm-256color"
    _planned_project(project, env)
    session = f"dl-live-view-{secrets.token_hex(3)}"
    done = project / "apply.done"
    script = project / "apply.sh"
    exports = "".join(
        f"export {k}={shq(v)}\n" for k, v in env.items() if re.fullmatch(r"[A-Z_][A-Z0-9_]*", k)
    )
    script.write_text(
        f"{exports}cd {shq(str(project))}\n"
        f"{shq(str(DREAMLAKE))} provider apply -n lv --yes; echo rc=$? > {shq(str(done))}\n"
        "sleep 60\n"
    )
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", "bash", str(script)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    captures: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while not done.exists() and time.monotonic() < deadline:
            pane = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session],
                capture_output=True,
                text=True,
                check=False,
                stdin=subprocess.DEVNULL,
            ).stdout
            captures.append(pane)
            time.sleep(0.5)
        final = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", session],
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
        ).stdout
    finally:
        subprocess.run(
            ["tmux", "kill-session", "-t", f"={session}"], check=False, stdin=subprocess.DEVNULL
        )
    assert done.exists() and done.read_text().strip() == "rc=0", (captures[-3:], final)
    # the live region: a resource in flight with its elapsed time, seen going up
    seen = [
        float(m.group(1))
        for pane in captures
        for m in re.finditer(r"creating terraform_data\.slow\[0\]  (\d+\.\d)s", pane)
    ]
    assert len(set(seen)) >= 3 and seen == sorted(seen) and seen[-1] - seen[0] >= 1.5, (
        seen,
        captures,
    )
    assert any(re.search(r"apply lv  \d+\.\ds  0/2 done", pane) for pane in captures), captures
    # then gone: finished resources stay as lines, the result follows, no live region left
    assert "✓ terraform_data.slow[0] created" in final and "✓ applied" in final, final
    assert "creating terraform_data" not in final, final


def shq(s: str) -> str:
    import shlex

    return shlex.quote(s)


@pytest.mark.slow
@pytest.mark.skipif(not MODERN, reason="needs a terraform binary >= 1.4 (terraform_data)")
@pytest.mark.skipif(not DREAMLAKE.is_file(), reason=f"needs the console script {DREAMLAKE}")
def test_not_a_terminal_gets_plain_lines(project: Path) -> None:
    env = dict(os.environ, TERRAFORM_BINARY=MODERN[-1][1], TF_CLI_CONFIG_FILE=os.devnull)
    _planned_project(project, env)
    p = subprocess.run(
        [str(DREAMLAKE), "provider", "plan", "-n", "lv"],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "terraform_data.slow[0]: Plan to create" in p.stderr
    assert "Plan: 2 to add" in p.stderr
    assert "\x1b[" not in p.stderr + p.stdout  # no cursor movement, no colours
