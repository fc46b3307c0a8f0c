"""One daemon per provider identity, on real components: the test sshd on 127.0.0.1,
tmux, the control plane. Two roots (two teams, each in its own namespace) each have
an ``ssh`` provider called ``lab`` on the same host.

Root A's daemon was installed by an older dreamlake, keyed by the name
(``~/.dreamlake/nymph/lab``, session ``nymph-lab``). Root B connects: its daemon
lands under its own identity and A's is untouched. status, suspend and resume find
A's under the old key; A's next connect moves it under A's identity; destroy removes
each root's own daemon only."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import Client
from dreamlake.engine.daemon import install
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell, open_ssh
from dreamlake.engine.remote.ssh import SSHTarget
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.destroy import destroy
from dreamlake.engine.verbs.resume import resume
from dreamlake.engine.verbs.status import status
from dreamlake.engine.verbs.suspend import suspend

pytestmark = [pytest.mark.needs_sshd, pytest.mark.slow]
NAME = "lab"


def _root(base: Path, namespace: str, sshd: Any) -> tuple[Path, str]:
    """A project whose control-plane namespace is its own, with an ``ssh`` provider
    ``lab`` on the test sshd; returns it and the provider's identity."""
    project = base / namespace
    project.mkdir()
    (project / ".dreamrc").write_text(f"lakeshore:\n  namespace: {namespace}\n")
    create(NAME, "ssh", cwd=project)
    pdir = project / ".dream" / "providers" / NAME
    adopt = json.loads((pdir / "adopt.json").read_text())
    adopt.update(
        host=sshd.host,
        user=sshd.user,
        port=sshd.port,
        queues=["default"],
        identity_file=str(sshd.client_key),
    )
    (pdir / "adopt.json").write_text(json.dumps(adopt, indent=2) + "\n")
    return project, str(json.loads((pdir / "provider.json").read_text())["id"])


def _session(key: str) -> bool:
    return subprocess.run(["tmux", "has-session", "-t", f"=nymph-{key}"]).returncode == 0


def _until(pred: Any, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            return False
        time.sleep(0.3)
    return True


@pytest.fixture
def two_roots(
    sshd: Any, control_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[tuple[Path, str], tuple[Path, str]]]:
    monkeypatch.setenv("DREAMLAKE_SSH_KNOWN_HOSTS", str(tmp_path / "known_hosts"))
    monkeypatch.delenv("LAKESHORE_NAMESPACE", raising=False)
    admin = Client(control_plane.url, control_plane.admin_token_file.read_text().strip())
    have = {n.get("name") for n in admin.list_namespaces()}
    for ns in ("team-a", "team-b"):
        if ns not in have:
            admin.create_namespace(ns)
    a, b = _root(tmp_path, "team-a", sshd), _root(tmp_path, "team-b", sshd)
    try:
        yield a, b
    finally:
        for key in (NAME, a[1], b[1]):
            supervise.stop(LocalShell(), key)
        for key in (NAME, a[1], b[1]):
            subprocess.run(["rm", "-rf", str(sshd.home / ".dreamlake" / "nymph" / key)])


def _older_install(sshd: Any, cp: Any, identity: str) -> None:
    """What an older dreamlake did for root A: the daemon installed and started under
    its provider's name (the install and supervise functions without a key)."""
    admin = Client(cp.url, cp.admin_token_file.read_text().strip())
    token = admin.create_token("team-a", label="nymph lab (older install)")
    target = SSHTarget(sshd.host, sshd.user, sshd.port, identity_file=str(sshd.client_key))
    shell = open_ssh(target.with_env_defaults())
    try:
        cfg = install.DaemonConfig(
            provider=NAME,
            server=cp.url,
            namespace="team-a",
            token=token,
            queues=("default",),
            identity=identity,
        )
        inst = install.install(shell, cfg)
        caps = supervise.detect(shell)
        assert supervise.choose(caps) == "tmux"
        spec = supervise.DaemonSpec(NAME, inst.run_script, inst.dir, inst.log, caps.user)
        supervise.start(shell, spec, "tmux", caps)
    finally:
        shell.close()


def test_two_roots_with_a_provider_lab_on_one_host(
    two_roots: Any, sshd: Any, control_plane: Any
) -> None:
    (proj_a, id_a), (proj_b, id_b) = two_roots
    nymph = sshd.home / ".dreamlake" / "nymph"
    _older_install(sshd, control_plane, id_a)
    assert _until(lambda: status(NAME, cwd=proj_a, probe=False).status == "connected")
    # status finds A's daemon under its older key (nymph-lab: its install names A's id)
    seen = status(NAME, cwd=proj_a, probe=False)
    assert (seen.supervisor, seen.host) == ("tmux", sshd.spec), seen
    old_token = (nymph / NAME / "token").read_text()

    # B connects its own `lab`: its daemon is keyed by B's identity; A's is untouched.
    res = connect(NAME, cwd=proj_b, watch=30)
    assert res.status == "connected", (res, res.notes)
    assert any(f"session nymph-{id_b}" in n for n in res.notes), res.notes
    assert any(
        f"claiming '{NAME}'" in n or f"'{NAME}'" in n for n in res.notes
    )  # the name in prose
    assert (nymph / id_b / "nymph.json").is_file() and _session(id_b)
    assert json.loads((nymph / id_b / "nymph.json").read_text())["identity"] == id_b
    assert json.loads((nymph / NAME / "nymph.json").read_text())["identity"] == id_a
    assert (nymph / NAME / "token").read_text() == old_token and _session(NAME)
    assert status(NAME, cwd=proj_a, probe=False).status == "connected"
    assert status(NAME, cwd=proj_b, probe=False).status == "connected"

    # suspend and resume find A's daemon under the old key too; B's keeps running.
    res = suspend(NAME, cwd=proj_a)
    assert res.status == "suspended", (res, res.notes)
    assert _session(NAME) and (nymph / NAME / "run.sh").is_file()
    assert status(NAME, cwd=proj_b, probe=False).status == "connected"
    res = resume(NAME, cwd=proj_a, watch=30)
    assert res.status == "connected", (res, res.notes)

    # A's next connect (no live claim: suspended) moves its install under A's identity.
    assert suspend(NAME, cwd=proj_a).status == "suspended"
    res = connect(NAME, cwd=proj_a, watch=30)
    assert res.status == "connected", (res, res.notes)
    assert any(f"moved the daemon of '{NAME}'" in n for n in res.notes), res.notes
    assert not (nymph / NAME).exists() and not _session(NAME)
    assert (nymph / id_a / "nymph.json").is_file() and _session(id_a)
    # the same daemon, moved; its connect minted it a new token (one daemon token per
    # provider host: the one it held is revoked)
    assert (nymph / id_a / "token").read_text() != old_token
    assert status(NAME, cwd=proj_a, probe=False).supervisor == "tmux"
    assert _session(id_b) and status(NAME, cwd=proj_b, probe=False).status == "connected"

    # destroy takes down each root's own daemon only.
    res = destroy(NAME, yes=True, cwd=proj_a)
    assert res.exit_code == 0, (res, res.notes)
    assert any("removed the daemon's install" in n for n in res.notes), res.notes
    assert not (nymph / id_a).exists() and not _session(id_a)
    assert (nymph / id_b).is_dir() and _session(id_b)
    assert status(NAME, cwd=proj_b, probe=False).status == "connected"
    res = destroy(NAME, yes=True, cwd=proj_b)
    assert not (nymph / id_b).exists() and not _session(id_b)
