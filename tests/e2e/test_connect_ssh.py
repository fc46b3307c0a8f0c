"""The ssh journey against a real sshd, tmux and control plane, driven through the CLI
with stdin closed under a timeout: create → needs_input → adopt.json → connect →
connected; connect again → exists with no ssh connection; the daemon killed →
unclaimed → connect → connected; a wrong key → ssh-copy-id; unreachable → error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from daemon_keys import daemon_key
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.connect import connect
from ssh_hosts import edit_adopt, point_at

pytestmark = [pytest.mark.needs_sshd, pytest.mark.slow]

BIN = Path(sys.executable).parent


def dl(*args: str, cwd: Path, json_out: bool = True, timeout: float = 300) -> tuple[int, Any]:
    """``dreamlake provider ...`` as a subprocess: stdin closed, bounded."""
    exe = BIN / "dreamlake"
    argv = [str(exe)] if exe.exists() else [sys.executable, "-m", "dreamlake.cli.main"]
    argv += ["provider", *args] + (["--json"] if json_out else [])
    p = subprocess.run(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
    )
    if json_out:
        try:
            return p.returncode, json.loads(p.stdout)
        except ValueError:
            raise AssertionError(f"not JSON (rc {p.returncode}):\n{p.stdout}\n{p.stderr}") from None
    return p.returncode, p.stdout + p.stderr


@pytest.fixture
def adopted(sshd, control_plane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """An ssh provider created and pointed at the test sshd; its daemon stopped at the end."""
    monkeypatch.setenv("DREAMLAKE_SSH_KNOWN_HOSTS", str(tmp_path / "known_hosts"))
    name = f"lab-{uuid.uuid4().hex[:6]}"
    project = tmp_path / "proj"
    project.mkdir()
    rc, out = dl("create", "-n", name, "--provider", "ssh", cwd=project)
    assert (rc, out["status"]) == (0, "needs_input"), out
    assert {b["key"] for b in out["blocking"]} >= {"host", "user", "queues"}
    point_at(project, name, sshd)
    try:
        yield name, project
    finally:
        supervise.stop(LocalShell(), daemon_key(project, name))


def _daemon_pid(sshd, key: str) -> int | None:  # type: ignore[no-untyped-def]
    """The daemon's pid, found by its unique install path (no broad name match)."""
    token = f"{sshd.home}/.dreamlake/nymph/{key}/token"
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if token.encode() in cmd and any(b"python" in c for c in cmd[:1]):
            return int(d.name)
    return None


def test_ssh_journey_connect_exists_restart(adopted, sshd) -> None:  # type: ignore[no-untyped-def]
    name, project = adopted
    key = daemon_key(project, name)

    # connect: install over ssh, start under tmux (no systemd here), claim seen.
    rc, prose = dl("connect", "-n", name, cwd=project, json_out=False)
    assert rc == 0, prose
    assert "no supervisor on this host — the daemon is running under tmux" in prose
    assert f"(session nymph-{key})" in prose  # keyed by the provider's identity
    assert "It does NOT restart it" in prose
    deadline = time.monotonic() + 30
    while (out := dl("status", "-n", name, cwd=project)[1])["status"] != "connected":
        assert time.monotonic() < deadline, out
        time.sleep(0.5)
    # status on a connected provider: the live claim proves the daemon runs, so the
    # host is not asked (not one ssh connection); the supervisor is the one connect
    # recorded starting it under, no-supervisor as connect said.
    before = sshd.connections()
    rc, out = dl("status", "-n", name, cwd=project)
    assert (rc, out["status"], out["nextAction"]) == (0, "connected", None), out
    assert out["claim"]["live"] == 1
    assert out["supervisor"] == "tmux" and out["host"] == f"{sshd.user}@{sshd.host}:{sshd.port}"
    assert "no-supervisor" in out["degraded"]
    assert sshd.connections() == before

    # connect again: exists, nothing written, and not a single ssh connection.
    before = sshd.connections()
    rc, out = dl("connect", "-n", name, cwd=project)
    assert (rc, out["status"], out["files"]) == (0, "exists", []), out
    assert out["nextAction"]["kind"] == "run"
    assert sshd.connections() == before

    # the daemon dies (SIGKILL: no goodbye) → unclaimed once its heartbeat ages out.
    pid = _daemon_pid(sshd, key)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while True:
        rc, out = dl("status", "-n", name, cwd=project)
        if out["status"] == "unclaimed" or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert out["status"] == "unclaimed", out
    assert out["nextAction"]["command"].startswith(f"dreamlake provider connect -n {name}")

    # connect restarts it (in-process here, to read the result's fields).
    res = connect(name, cwd=project, watch=30)
    assert res.status == "connected", (res, res.notes)
    assert res.next_action is None
    assert res.supervisor == "tmux"
    assert res.host == f"root@{sshd.host}:{sshd.port}"
    assert "no-supervisor" in (res.degraded or [])
    assert any("It does NOT restart it" in n for n in res.notes)
    assert _daemon_pid(sshd, key) not in (None, pid)
    token = Path(f"{sshd.home}/.dreamlake/nymph/{key}/token")
    assert token.stat().st_mode & 0o777 == 0o600


def test_wrong_key_gives_ssh_copy_id(adopted, sshd) -> None:  # type: ignore[no-untyped-def]
    name, project = adopted
    edit_adopt(project, name, identity_file=str(sshd.wrong_key))
    rc, out = dl("connect", "-n", name, cwd=project, timeout=120)
    assert (rc, out["status"], out["kind"]) == (1, "error", "ssh_auth"), out
    assert out["nextAction"]["kind"] == "shell"
    assert out["nextAction"]["command"].startswith("ssh-copy-id")
    assert out["nextAction"]["command"].endswith(f"-p {sshd.port} root@{sshd.host}")
    assert "refused the ssh key" in out["error"]


def test_unreachable_host_is_an_error(adopted, sshd) -> None:  # type: ignore[no-untyped-def]
    import socket

    name, project = adopted
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        edit_adopt(project, name, port=s.getsockname()[1])  # bound, never listening
        rc, out = dl("connect", "-n", name, cwd=project, timeout=120)
    assert (rc, out["status"], out["kind"]) == (1, "error", "ssh_unreachable"), out
    assert out["nextAction"]["kind"] == "shell"


def test_missing_host_needs_input_without_ssh(sshd, control_plane, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    name = f"lab-{uuid.uuid4().hex[:6]}"
    project = tmp_path / "p"
    project.mkdir()
    dl("create", "-n", name, "--provider", "ssh", cwd=project)
    edit_adopt(project, name, queues=["default"])
    before = sshd.connections()
    rc, out = dl("connect", "-n", name, cwd=project)
    assert (rc, out["status"]) == (0, "needs_input"), out
    assert [b["key"] for b in out["blocking"]] == ["host", "user"]
    assert out["nextAction"]["kind"] == "edit_then_continue"
    assert out["nextAction"]["file"].endswith("adopt.json")
    assert sshd.connections() == before


def test_connecting_until_the_claim_is_seen(adopted, sshd, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """No watch at all: connect returns as soon as tmux started the daemon, before it
    could claim → connecting with a status next action; status then sees connected."""
    import dreamlake.engine.verbs.connect as connect_mod

    name, project = adopted
    monkeypatch.setattr(connect_mod, "START_GRACE", 0.0)
    # Freeze the moment right after the start: a warm daemon can register before
    # connect's one look, so connect sees the claims as they were before it (none
    # live). The real control plane answers the status calls below.
    from dreamlake.engine.contract.result import Claim

    with monkeypatch.context() as frozen:
        frozen.setattr(
            connect_mod.lakeshore, "fetch_claims", lambda cp, provider, **kw: Claim(live=0, gone=0)
        )
        res = connect(name, cwd=project, watch=0)
    assert res.status == "connecting", (res, res.notes)
    assert res.exit_code == 0
    assert res.next_action is not None
    assert res.next_action.command == f"dreamlake provider status -n {name}"
    assert res.supervisor == "tmux" and res.host == f"root@{sshd.host}:{sshd.port}"
    deadline = time.monotonic() + 30
    while True:
        rc, out = dl("status", "-n", name, cwd=project)
        if out["status"] == "connected" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert (rc, out["status"]) == (0, "connected"), out


def test_connect_host_is_kept_once_the_daemon_runs(adopted, sshd) -> None:  # type: ignore[no-untyped-def]
    """The host --host names is written into adopt.json when connect succeeded there
    (a failed one writes nothing: tests/engine/verbs/test_connect.py)."""
    name, project = adopted
    path = edit_adopt(project, name, host="", user="", port=None, queues=[])
    spec = f"{sshd.user}@{sshd.host}:{sshd.port}"
    # --host answers where, not which queues: an open decision stops connect first,
    # and nothing is written for it
    before = path.read_bytes()
    rc, out = dl("connect", "-n", name, "--host", spec, cwd=project)
    assert (rc, out["status"]) == (0, "needs_input"), out
    assert [b["key"] for b in out["blocking"]] == ["queues"], out
    assert out["nextAction"]["command"] == f"dreamlake provider connect -n {name} --host {spec}"
    assert path.read_bytes() == before
    data = json.loads(before)
    data["queues"] = ["default"]
    path.write_text(json.dumps(data))
    rc, out = dl("connect", "-n", name, "--host", spec, cwd=project)
    assert (rc, out["status"]) == (0, "connected"), out
    kept = json.loads(path.read_text())
    assert (kept["host"], kept["user"], kept["port"]) == (sshd.host, sshd.user, sshd.port)
    assert kept["queues"] == ["default"]
