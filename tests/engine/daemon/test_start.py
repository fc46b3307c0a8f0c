"""Supervisor detection, the choice, the systemd unit as a value, and a real tmux start."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.daemon.start import Capabilities, DaemonSpec
from dreamlake.engine.remote import LocalShell

SPEC = DaemonSpec(
    provider="lab-box",
    run_script="/home/u/.dreamlake/nymph/lab-box/run.sh",
    workdir="/home/u/.dreamlake/nymph/lab-box",
    log="/home/u/.dreamlake/nymph/lab-box/nymph.log",
    user="u",
)


def test_parse_capabilities() -> None:
    caps = supervise.parse_capabilities(
        "user=u\nuid=1000\nsystemd=yes\nsystemd_user=yes\nlinger=yes\ntmux=yes\n"
    )
    assert caps == Capabilities("u", 1000, True, True, True, False, True)
    assert supervise.parse_capabilities("garbage\n") == Capabilities()


@pytest.mark.parametrize(
    ("caps", "expected"),
    [
        (Capabilities(systemd=True, systemd_user=True, linger=True, tmux=True), "systemd-user"),
        (Capabilities(systemd=True, systemd_user=True, linger=False, sudo=True), "systemd-system"),
        (Capabilities(systemd=True, uid=0, sudo=True, tmux=True), "systemd-system"),
        (Capabilities(systemd=True, systemd_user=True, tmux=True), "tmux"),
        (Capabilities(systemd=False, sudo=True, tmux=True), "tmux"),
        (Capabilities(), None),
    ],
)
def test_choose_best_supervisor(caps: Capabilities, expected: str | None) -> None:
    assert supervise.choose(caps) == expected


def test_user_unit_text() -> None:
    text = supervise.systemd_unit(SPEC, system=False)
    assert text.splitlines()[0] == "[Unit]"
    assert "ExecStart=/home/u/.dreamlake/nymph/lab-box/run.sh" in text
    assert "Restart=always" in text
    assert "WantedBy=default.target" in text
    assert "User=" not in text


def test_unit_text_quotes_a_path_with_spaces() -> None:
    spec = DaemonSpec(
        provider="lab-box",
        run_script="/home/a b/.dreamlake/nymph/lab-box/run.sh",
        workdir="/home/a b/50%/nymph",
        log="/home/a b/nymph.log",
        user="a b",
    )
    text = supervise.systemd_unit(spec, system=False)
    assert 'ExecStart="/home/a b/.dreamlake/nymph/lab-box/run.sh"' in text
    assert "WorkingDirectory=/home/a b/50%%/nymph" in text  # literal path, % escaped


def test_system_unit_text_runs_as_the_user() -> None:
    text = supervise.systemd_unit(SPEC, system=True)
    assert "Restart=always" in text and "User=u" in text
    assert "WantedBy=multi-user.target" in text
    assert SPEC.unit_name == "nymph-lab-box.service"


def test_tmux_prose_says_it_does_not_restart() -> None:
    lines = supervise.describe("tmux", SPEC, remote=True)
    assert lines[0].startswith("⚠ no supervisor on this host — the daemon is running under tmux")
    assert "(session nymph-lab-box)" in lines[0]
    assert any("It does NOT restart it" in x for x in lines)
    assert any("dreamlake provider connect -n lab-box" in x for x in lines)
    assert supervise.describe("systemd-user", SPEC, remote=True)[0].startswith(
        "supervisor: systemd"
    )


def test_detect_on_this_machine() -> None:
    caps = supervise.detect(LocalShell())
    assert caps.user and caps.uid >= 0
    assert caps.tmux == (shutil.which("tmux") is not None)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_tmux_start_restart_stop(tmp_path: Path) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    run = tmp_path / "run.sh"
    run.write_text("#!/bin/sh\necho started $$\nexec sleep 300\n")
    run.chmod(0o755)
    spec = DaemonSpec(name, str(run), str(tmp_path), str(tmp_path / "nymph.log"))
    sh = LocalShell()
    caps = Capabilities(tmux=True)
    try:
        t0 = time.monotonic()
        supervise.start(sh, spec, "tmux", caps)
        assert time.monotonic() - t0 < 10  # returns once tmux new-session -d does
        assert supervise.running(sh, name, "tmux", caps)
        supervise.start(sh, spec, "tmux", caps)  # a restart replaces the session
        assert supervise.running(sh, name, "tmux", caps)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and "started" not in _read(spec.log):
            time.sleep(0.1)
        assert "started" in _read(spec.log)
    finally:
        supervise.stop(sh, name)
    assert not supervise.running(sh, name, "tmux", caps)


def _pane(name: str) -> tuple[str, str]:
    out = subprocess.run(
        ["tmux", "list-panes", "-t", f"=nymph-{name}:", "-F", "#{pane_pid} #{pane_dead}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    pid, dead = out.stdout.split()
    return pid, dead


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_restarting_the_only_session_never_races_the_server_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's session alone on a tmux server of this test's own: each restart
    replaces the pane's process in place, so the server never exits under a
    ``new-session`` ("server exited unexpectedly"); a suspended daemon's kept, dead
    pane comes back running and is no longer kept."""
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))
    name = f"t-{uuid.uuid4().hex[:8]}"
    run = tmp_path / "run.sh"
    run.write_text("#!/bin/sh\nexec sleep 300\n")
    run.chmod(0o755)
    spec = DaemonSpec(name, str(run), str(tmp_path), str(tmp_path / "nymph.log"))
    sh, caps = LocalShell(), Capabilities(tmux=True)
    try:
        supervise.start(sh, spec, "tmux", caps)
        pids = {_pane(name)[0]}
        for _ in range(10):
            supervise.start(sh, spec, "tmux", caps)
            pids.add(_pane(name)[0])
        assert len(pids) == 11  # a new process every time, in the same session
        target = f"={spec.session}:"
        subprocess.run(["tmux", "set-option", "-w", "-t", target, "remain-on-exit", "on"],
                       check=True)  # fmt: skip
        subprocess.run(["tmux", "respawn-pane", "-k", "-t", target, "true"], check=True)
        deadline = time.monotonic() + 5
        while _pane(name)[1] != "1" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _pane(name)[1] == "1"  # suspended: the pane is kept, dead
        supervise.start(sh, spec, "tmux", caps)
        assert _pane(name)[1] == "0"
        kept = subprocess.run(
            ["tmux", "show-options", "-w", "-v", "-t", target, "remain-on-exit"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert kept.stdout.strip() == "off"
    finally:
        subprocess.run(["tmux", "kill-server"], capture_output=True, check=False)


def test_a_unit_replaces_the_tmux_daemon(tmp_path: Path) -> None:
    """connect after the host gained linger: the daemon moves to the unit and the old
    tmux session (real here) is gone, so one worker claims the provider, not two."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    run = tmp_path / "run.sh"
    run.write_text("#!/bin/sh\nexec sleep 300\n")
    run.chmod(0o755)
    spec = DaemonSpec(name, str(run), str(tmp_path), str(tmp_path / "nymph.log"))
    sh = LocalShell()
    try:
        supervise.start(sh, spec, "tmux", Capabilities(tmux=True))
        assert supervise.running(sh, name, "tmux", Capabilities(tmux=True))
        # systemd itself cannot run here: stop what is not the unit, as start does first.
        supervise._stop_elsewhere(sh, spec, "systemd-user", Capabilities(tmux=True))
        assert not supervise.running(sh, name, "tmux", Capabilities(tmux=True))
    finally:
        supervise.stop(sh, name)


def test_tmux_start_disables_the_units_it_replaces() -> None:
    sh = RecordingShell()
    caps = Capabilities(user="u", uid=1000, systemd=True, systemd_user=True, sudo=True, tmux=True)
    supervise.start(sh, SPEC, "tmux", caps)
    joined = "\n".join(sh.commands)
    assert "systemctl --user disable --now nymph-lab-box.service" in joined
    assert "sudo -n systemctl disable --now nymph-lab-box.service" in joined
    assert sh.commands[-1].startswith("{ tmux set-option")  # the start itself comes last


def _read(p: str) -> str:
    try:
        return Path(p).read_text()
    except OSError:
        return ""


class RecordingShell:
    """A stand-in for a host with systemd, which cannot run here: records every
    command and file, answers success."""

    label = "test-host"
    is_local = False

    def __init__(self, home: str = "/home/u") -> None:
        self.commands: list[str] = []
        self.files: dict[str, tuple[bytes, int]] = {}
        self.home = home

    def run(self, command: str, *, timeout: float = 60.0):  # type: ignore[no-untyped-def]
        from dreamlake.engine.remote import CommandResult

        self.commands.append(command)
        out = self.home if "$HOME" in command else ""
        return CommandResult(command, 0, out, "")

    def put_bytes(self, data: bytes, remote_path: str, *, mode: int = 0o644) -> None:
        self.files[remote_path] = (data, mode)

    def put_file(self, local_path: str, remote_path: str, *, mode: int = 0o644) -> None:
        self.files[remote_path] = (Path(local_path).read_bytes(), mode)

    def close(self) -> None:
        pass


def test_systemd_user_start_writes_the_unit_and_restarts() -> None:
    sh = RecordingShell()
    supervise.start(
        sh, SPEC, "systemd-user", Capabilities(user="u", uid=1000, systemd_user=True, linger=True)
    )
    path = "/home/u/.config/systemd/user/nymph-lab-box.service"
    assert sh.files[path][0].decode() == supervise.systemd_unit(SPEC, system=False)
    joined = "\n".join(sh.commands)
    assert "systemctl --user daemon-reload" in joined
    assert "systemctl --user restart nymph-lab-box.service" in joined
    assert "XDG_RUNTIME_DIR" in joined
    assert "sudo" not in joined


def test_systemd_system_start_uses_passwordless_sudo() -> None:
    sh = RecordingShell()
    supervise.start(
        sh, SPEC, "systemd-system", Capabilities(user="u", uid=1000, systemd=True, sudo=True)
    )
    staged = f"{SPEC.workdir}/nymph-lab-box.service"
    assert "User=u" in sh.files[staged][0].decode()
    joined = "\n".join(sh.commands)
    assert f"sudo -n install -m 0644 {staged} /etc/systemd/system/nymph-lab-box.service" in joined
    assert "sudo -n systemctl restart nymph-lab-box.service" in joined
    root = RecordingShell("/root")
    supervise.start(
        root, SPEC, "systemd-system", Capabilities(user="root", uid=0, systemd=True, sudo=True)
    )
    assert not any("sudo" in c for c in root.commands)


def test_the_start_bound_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from dreamlake.engine.contract.errors import UsageError

    monkeypatch.delenv(supervise.START_TIMEOUT_ENV, raising=False)
    assert supervise.START_TIMEOUT_ENV == "DREAMLAKE_DAEMON_START_TIMEOUT"
    assert supervise.start_timeout() == supervise.DEFAULT_START_TIMEOUT == 30.0
    monkeypatch.setenv(supervise.START_TIMEOUT_ENV, " 2.5 ")
    assert supervise.start_timeout() == 2.5
    for bad in ("soon", "0", "-1", "nan", "inf"):
        monkeypatch.setenv(supervise.START_TIMEOUT_ENV, bad)
        with pytest.raises(UsageError, match="not a number of seconds above 0"):
            supervise.start_timeout()
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert f"| `{supervise.START_TIMEOUT_ENV}` |" in readme


def test_a_tmux_start_that_hangs_ends_at_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dreamlake.engine.contract.errors import RemoteError

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tmux").write_text(
        '#!/bin/sh\ncase " $* " in *" new-session "*) exec sleep 20;; esac\nexit 1\n'
    )
    (bin_dir / "tmux").chmod(0o755)
    shell = LocalShell(env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    monkeypatch.setenv(supervise.START_TIMEOUT_ENV, "1")
    spec = DaemonSpec("hang", str(tmp_path / "run.sh"), str(tmp_path), str(tmp_path / "log"))
    started = time.monotonic()
    with pytest.raises(RemoteError) as hung:
        supervise.start(shell, spec, "tmux", Capabilities(tmux=True))
    assert hung.value.kind == "remote_timeout" and "within 1s" in hung.value.message
    assert time.monotonic() - started < 15  # the bound, not the hang (20 s)
