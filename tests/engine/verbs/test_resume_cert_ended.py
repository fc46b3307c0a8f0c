"""A provider suspended for longer than its daemon's client certificate lives comes
back ``connected`` on resume: a real ``lakeshore serve`` over TLS on 127.0.0.1 with a
CA of its own, the daemon under tmux (``local``) or installed over ssh on the test
sshd (``ssh``).

While it is suspended the host's certificate is replaced by one the server's own CA
signed that ended a day ago (tests/tls_plane.py: what the host holds after such a
suspend, without waiting for it). ``resume`` reads that on the host, hands it a
fresh one-use bootstrap token as ``connect`` does (the token and certificate it held
are revoked at once), and the daemon spends it on a new certificate and claims."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from applied_local import applied_local, point_at
from daemon_keys import daemon_key
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.resume import resume
from dreamlake.engine.verbs.suspend import suspend
from tls_plane import (
    admin_of,
    bootstraps,
    hold_ended_certificate,
    resumed_after_the_certificate_ended,
    serving_tls,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (apt-get install -y tmux)"),
]


@pytest.fixture(scope="module")
def tls_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with serving_tls(tmp_path_factory.mktemp("plane")) as plane:
        yield plane


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from ssh_hosts import running_sshd

    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def test_local_resume_after_the_certificate_ended_is_connected(
    tls_plane: dict[str, Any], project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_at(monkeypatch, tmp_path, tls_plane["url"], tls_plane["ca"], tls_plane["token_file"])
    name, workdir, key, folder = applied_local(project, tmp_path, "rc", ("applied",))
    try:
        resumed_after_the_certificate_ended(name, project, folder, tls_plane, tmp_path)
        assert (workdir / "back.txt").read_text() == "back\n"
    finally:
        supervise.stop(LocalShell(), key)


def test_a_certificate_that_outlives_the_suspend_is_kept(
    tls_plane: dict[str, Any], project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short suspend: the daemon renews its certificate itself, so resume hands
    nothing (no second bootstrap token) and the same certificate claims."""
    point_at(monkeypatch, tmp_path, tls_plane["url"], tls_plane["ca"], tls_plane["token_file"])
    name, _workdir, key, folder = applied_local(project, tmp_path, "rk", ("applied",))
    try:
        assert connect(name, cwd=project, watch=60).status == "connected"
        serial = json.loads((folder / "daemon.json").read_text())["serial"]
        assert suspend(name, cwd=project).status == "suspended"
        res = resume(name, cwd=project, watch=60)
        assert res.status == "connected", (res, res.notes)
        assert not any("client certificate" in n for n in res.notes), res.notes
        assert len(bootstraps(admin_of(tls_plane), name)) == 1
        assert json.loads((folder / "daemon.json").read_text())["serial"] == serial
    finally:
        supervise.stop(LocalShell(), key)


@pytest.mark.needs_sshd
def test_ssh_resume_after_the_certificate_ended_is_connected_on_the_command_line(
    tls_plane: dict[str, Any], sshd: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ssh_hosts import point_at as adopt_host

    monkeypatch.setenv("DREAMLAKE_SSH_KNOWN_HOSTS", str(tmp_path / "known_hosts"))
    monkeypatch.setenv("HOME", str(sshd.home))  # this machine's probes see the login HOME
    monkeypatch.setenv("LAKESHORE_URL", tls_plane["url"])
    monkeypatch.setenv("LAKESHORE_CA", str(tls_plane["ca"]))
    monkeypatch.setenv("LAKESHORE_TOKEN_FILE", str(tls_plane["token_file"]))
    project = tmp_path / "proj"
    project.mkdir()
    name = f"rs-{uuid.uuid4().hex[:6]}"
    create(name, "ssh", cwd=project)
    adopt_host(project, name, sshd)
    key = daemon_key(project, name)
    folder = Path(f"{sshd.home}/.dreamlake/nymph/{key}")
    try:
        resumed_after_the_certificate_ended(name, project, folder, tls_plane, tmp_path, cli=True)
    finally:
        supervise.stop(LocalShell(), key)


def test_a_refused_mint_starts_nothing_and_names_the_fix(
    tls_plane: dict[str, Any], project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's token may not mint (not an admin's): resume changes nothing on
    the host, starts no daemon that would be refused, and its next action is the
    fix, then resume again; with an admin token resume ends connected."""
    from dreamlake.engine.daemon.suspend import daemon_state

    point_at(monkeypatch, tmp_path, tls_plane["url"], tls_plane["ca"], tls_plane["token_file"])
    name, _workdir, key, folder = applied_local(project, tmp_path, "rm", ("applied",))
    try:
        assert connect(name, cwd=project, watch=60).status == "connected"
        assert suspend(name, cwd=project).status == "suspended"
        hold_ended_certificate(folder, tls_plane["data"], name)
        ended = (folder / "daemon.json").read_text()
        person = tmp_path / "person.token"
        person.write_text(admin_of(tls_plane).create_token("default", label="a person"))
        monkeypatch.setenv("LAKESHORE_TOKEN_FILE", str(person))

        res = resume(name, cwd=project, watch=5)
        assert (res.status, res.kind) == ("error", "token_mint_failed"), (res, res.notes)
        assert res.next_action is not None and res.next_action.command == (
            f"dreamlake provider resume -n {name}"
        )
        assert "admin token" in (res.error or ""), res.error
        assert daemon_state(LocalShell(), key).state == "stopped"  # nothing started
        assert (folder / "daemon.json").read_text() == ended  # nothing changed there
        assert len(bootstraps(admin_of(tls_plane), name)) == 1

        monkeypatch.setenv("LAKESHORE_TOKEN_FILE", str(tls_plane["token_file"]))
        assert resume(name, cwd=project, watch=60).status == "connected"
    finally:
        supervise.stop(LocalShell(), key)
