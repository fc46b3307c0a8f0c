"""The daemon's install over a real sshd. The same hash twice: nothing uploaded.
connect to a host whose python is too old for the daemon (below 3.9): an ``error`` result naming what was found, whose next action installs python3
on that host; nothing started, no daemon files beyond the install folder.

The old interpreters are test doubles (shell scripts answering the version probe as
python 3.8 / 3.7 would), put first on the sessions' PATH with sshd's ``SetEnv``, so
every ``python3*`` name the probe looks for finds one of them."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_keys import daemon_key
from dreamlake.engine.daemon import install
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from ssh_hosts import point_at, programs, running_sshd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import sshd as _sshd

pytestmark = [pytest.mark.needs_sshd, pytest.mark.slow]


@pytest.fixture(scope="module")
def old_python_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_sshd.SSHServer]:
    base = tmp_path_factory.mktemp("sshd-oldpy")
    fake = base / "oldbin"
    versions = {name: "3.8" if name == "python3" else "3.7" for name in install._PYTHON_NAMES}
    scripts = {name: f'#!/bin/sh\necho "{fake / name} {v}"\n' for name, v in versions.items()}
    with running_sshd(base, programs(fake, scripts)) as server:
        yield server


def test_python_below_3_9_is_an_error_with_a_next_action(
    old_python_sshd: _sshd.SSHServer,
    control_plane: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sshd = old_python_sshd
    monkeypatch.setenv("DREAMLAKE_SSH_KNOWN_HOSTS", str(tmp_path / "known_hosts"))
    monkeypatch.setenv("DREAMLAKE_DAEMON_CACHE", str(tmp_path / "cache"))
    name = f"oldpy-{uuid.uuid4().hex[:6]}"
    project = tmp_path / "proj"
    project.mkdir()
    assert create(name, "ssh", cwd=project).status == "needs_input"
    point_at(project, name, sshd)

    try:
        res = connect(name, cwd=project, watch=5)
    finally:
        # were it to start anyway: never left running
        supervise.stop(LocalShell(), daemon_key(project, name))
    assert res.status == "error", (res, res.notes)
    assert res.kind == "no_python"
    assert res.error is not None
    assert "no python 3.9 or newer" in res.error
    assert "oldbin/python3 (3.8)" in res.error
    assert res.next_action is not None
    assert res.next_action.kind == "shell"
    assert res.next_action.command == "sudo apt-get install -y python3"
    assert res.next_action.host == f"root@{sshd.host}:{sshd.port}"
    d = sshd.home / ".dreamlake" / "nymph" / name
    assert not (d / "run.sh").exists()  # nothing to start was written


def test_over_ssh_the_same_hash_uploads_nothing(sshd: _sshd.SSHServer, tmp_path: Path) -> None:
    """install() over the real sshd: the first run uploads the zipapp and the host's
    python3 runs it; a second run finds the same sha256 there and uploads nothing."""
    from dreamlake.engine.remote import open_ssh
    from dreamlake.engine.remote.ssh import SSHTarget

    target = SSHTarget(
        host=sshd.host,
        user=sshd.user,
        port=sshd.port,
        identity_file=str(sshd.client_key),
        known_hosts=str(tmp_path / "known_hosts"),
    )
    name = f"hash-{uuid.uuid4().hex[:6]}"
    cfg = install.DaemonConfig(name, "http://127.0.0.1:9", "default", "t", ("default",))
    cache = tmp_path / "cache"
    shell = open_ssh(target)
    try:
        said: list[str] = []
        first = install.install(shell, cfg, progress=said.append, cache=cache)
        assert first.changed and any("uploading the daemon" in s for s in said)
        app = sshd.home / ".dreamlake" / "nymph" / name / "nymph.pyz"
        inode = app.stat().st_ino
        ok = shell.run(f"cd / && {first.python} -I {app} --help")
        assert ok.ok and "--provider" in ok.stdout, ok.stderr
        said.clear()
        again = install.install(shell, cfg, progress=said.append, cache=cache)
        assert not again.changed and said == []
        assert app.stat().st_ino == inode
    finally:
        shell.close()
