"""A host that hangs or drops the transfer part-way, over a real sshd: connect's next
action never repeats the connect that just failed. An ssh provider's host is the
person's (``adopt.json``), so the next action is the edit that names another host
there, then connect; following it once (pointing adopt.json at a host that works)
connects, not the same failure again.

Two real OpenSSH servers on 127.0.0.1: the bad host, whose ``tmux new-session``
hangs (a host under load) or whose install folder cannot be written (the SFTP
transfer breaks), and the good one (tests/sshd.py, the e2e fixture); a real control
plane; the CLI in a subprocess with stdin closed."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sshd as _sshd
from daemon_keys import daemon_key
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from ssh_hosts import point_at, programs, running_sshd

pytestmark = [pytest.mark.needs_sshd, pytest.mark.slow]

BIN = Path(sys.executable).parent

_HANGING_TMUX = """#!/bin/sh
# A tmux whose new-session hangs (a host under load) past the start bound the test
# sets (HANG_BOUND); anything else finds nothing.
case " $* " in *" new-session "*) exec sleep 20;; esac
exit 1
"""
HANG_BOUND = "3"  # DREAMLAKE_DAEMON_START_TIMEOUT: seconds, not the default 30


@pytest.fixture(scope="module")
def bad_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_sshd.SSHServer]:
    """An sshd whose sessions find a tmux that hangs at ``new-session`` first on PATH."""
    base = tmp_path_factory.mktemp("bad-host")
    with running_sshd(base / "sshd", programs(base / "bin", {"tmux": _HANGING_TMUX})) as server:
        yield server


def dl(project: Path, *args: str) -> Any:
    """``dreamlake provider ... --json`` as an agent runs it: stdin closed, bounded."""
    return run(project, ["dreamlake", "provider", *args])


def run(project: Path, argv: list[str], **env: str) -> Any:
    exe = BIN / argv[0]
    proc = subprocess.run(
        [str(exe) if exe.is_file() else argv[0], *argv[1:], "--json"],
        cwd=project,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(
            f"not JSON (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        ) from None


@pytest.fixture
def provider(
    bad_host: _sshd.SSHServer,
    sshd: _sshd.SSHServer,
    control_plane: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[str, Path]]:
    """An ssh provider pointed at the bad host; its daemon stopped at the end."""
    monkeypatch.setenv("DREAMLAKE_SSH_KNOWN_HOSTS", str(tmp_path / "known_hosts"))
    name = f"box-{uuid.uuid4().hex[:6]}"
    project = tmp_path / "proj"
    project.mkdir()
    assert dl(project, "create", "-n", name, "--provider", "ssh")["status"] == "needs_input"
    point_at(project, name, bad_host)
    try:
        yield name, project
    finally:
        supervise.stop(LocalShell(), daemon_key(project, name))


def connect_fails_then_follow(
    project: Path, name: str, kind: str, good: _sshd.SSHServer, **env: str
) -> dict[str, Any]:
    """connect fails with ``kind`` (``env`` added to its environment); its next action
    is followed once (the edit it asks for names the good host in adopt.json, then
    its command, with the default settings). What that answers."""
    argv = ["dreamlake", "provider", "connect", "-n", name]
    out = run(project, argv, **env)
    assert (out["status"], out["kind"]) == ("error", kind), out
    assert "answers over ssh and is not overloaded" in out["error"], out["error"]
    nxt = out["nextAction"]
    adopt = project / ".dream" / "providers" / name / "adopt.json"
    # not the connect that just failed: the edit of the host comes first
    assert nxt["kind"] == "edit_then_continue", nxt
    assert Path(nxt["file"]).resolve() == adopt.resolve(), nxt
    assert shlex.split(nxt["command"]) == argv, nxt
    point_at(project, name, good)
    after = run(project, shlex.split(nxt["command"]))
    assert not (
        after.get("status") == "error"
        and after.get("kind") == out["kind"]
        and after.get("error") == out["error"]
    ), after
    return after


def test_a_host_that_hangs_names_another_host_not_connect_again(
    provider: tuple[str, Path], bad_host: _sshd.SSHServer, sshd: _sshd.SSHServer
) -> None:
    """Starting the daemon under tmux hangs past connect's bound on the bad host
    (``remote_timeout``), the bound shortened to a few seconds."""
    name, project = provider
    bound = {"DREAMLAKE_DAEMON_START_TIMEOUT": HANG_BOUND}
    after = connect_fails_then_follow(project, name, "remote_timeout", sshd, **bound)
    assert after["status"] in ("connected", "connecting"), after
    assert after["host"] == f"{sshd.user}@{sshd.host}:{sshd.port}", after


def test_a_transfer_that_breaks_names_another_host_not_connect_again(
    provider: tuple[str, Path], bad_host: _sshd.SSHServer, sshd: _sshd.SSHServer
) -> None:
    """The daemon's install folder on the bad host is one no file can be made in (a
    link into sysfs): the SFTP upload breaks part-way (``remote_io``)."""
    name, project = provider
    folder = bad_host.home / ".dreamlake" / "nymph" / daemon_key(project, name)
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.symlink_to("/sys/kernel", target_is_directory=True)
    try:
        after = connect_fails_then_follow(project, name, "remote_io", sshd)
    finally:
        folder.unlink()
    assert after["status"] in ("connected", "connecting"), after
    assert after["host"] == f"{sshd.user}@{sshd.host}:{sshd.port}", after
