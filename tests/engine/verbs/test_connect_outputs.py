"""connect on applied terraform: the host comes from the ``worker_host`` output (real
terraform, a template with no provider plugins so it runs offline); with no such
output, ``needs_input`` with a ``host`` blocking. The shell factory records the target
and refuses, a stand-in for SSH so no install happens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.contract.errors import RemoteError
from dreamlake.engine.remote.ssh import SSHTarget
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("terraform") is None, reason="needs a terraform binary"),
]


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    """A control-plane token, so connect goes on to open the (recording) shell."""
    monkeypatch.setenv("LAKESHORE_TOKEN", "test-token")


class Recorder:
    def __init__(self) -> None:
        self.targets: list[Any] = []

    def __call__(self, target: Any) -> Any:
        self.targets.append(target)
        raise RemoteError("unreachable (recorded)", kind="ssh_unreachable")


def _applied(project: Path, name: str) -> None:
    assert create(name, "bare", cwd=project).status == "scaffolded"
    assert plan(name, cwd=project).status == "ready"
    assert apply(name, yes=True, cwd=project).status in ("applied", "unclaimed")


def test_worker_host_output_names_the_host(own_templates: Path, project: Path) -> None:
    _applied(project, "box")
    rec = Recorder()
    said: list[str] = []
    res = connect("box", cwd=project, shell_factory=rec, progress=said.append)
    assert rec.targets == [SSHTarget("localhost")]
    assert (res.status, res.kind, res.host) == ("error", "ssh_unreachable", "localhost")
    # a derived host is named before it is contacted, and in the result
    assert said and "connecting to localhost" in said[-1] and "worker_host output" in said[-1]
    rec = Recorder()
    connect("box", host="me@other:2022", cwd=project, shell_factory=rec)
    assert rec.targets == [SSHTarget("other", "me", 2022)]


def test_no_worker_host_output_needs_input(own_templates: Path, project: Path) -> None:
    main = own_templates / "bare" / "terraform" / "main.tf"
    main.write_text('output "something_else" {\n  value = "x"\n}\n')
    _applied(project, "nohost")
    rec = Recorder()
    res = connect("nohost", cwd=project, shell_factory=rec)
    assert (res.status, res.exit_code) == ("needs_input", 0)
    assert [b.key for b in res.blocking or []] == ["host"]
    assert res.next_action is not None and res.next_action.kind == "edit_then_continue"
    assert rec.targets == []


def test_the_host_connect_recorded_wins_over_worker_host(
    own_templates: Path, project: Path
) -> None:
    """A restart (``connect`` without ``--host``, as status's next action says) goes to
    the host connect used before, not to the ``worker_host`` output; later verbs never
    reach an output-derived host connect did not record."""
    from dreamlake.engine.daemon import host as daemon_host
    from dreamlake.engine.world.observe import observe
    from dreamlake.engine.world.paths import find_root

    _applied(project, "kept")
    pdir = project / ".dream" / "providers" / "kept"
    obs = observe("kept", find_root(cwd=project), None, probe=False, claims=False)
    assert daemon_host.where(obs) is None  # worker_host names one, but no one connected it
    assert daemon_host.outputs_host(obs) == SSHTarget("localhost")
    note = daemon_host.unrecorded_note(obs, "stopped")
    assert note is not None and "localhost" in note and "connect" in note

    given = SSHTarget("127.0.0.1", "me", 2022)
    assert daemon_host.write(pdir, False, given, "prv-x", "--host") == pdir / "daemon.json"
    assert daemon_host.write(pdir, False, given, "prv-x", "record") is None  # unchanged
    rec = Recorder()
    connect("kept", cwd=project, shell_factory=rec)
    assert rec.targets == [given]
    obs = observe("kept", find_root(cwd=project), None, probe=False, claims=False)
    found = daemon_host.where(obs)
    assert found is not None and (found.target, found.source, found.key) == (
        given,
        "record",
        "prv-x",
    )
    assert json.loads((pdir / "daemon.json").read_text())["from"] == "--host"

    assert daemon_host.clear(pdir) == pdir / "daemon.json" and daemon_host.clear(pdir) is None


def test_a_new_host_takes_the_daemon_down_on_the_recorded_one_first(
    own_templates: Path, project: Path
) -> None:
    """One daemon per provider: connect to another host than the recorded one stops
    (and removes) the daemon there first; unreachable, that is a note and connect goes on."""
    from dreamlake.engine.daemon import host as daemon_host

    _applied(project, "moving")
    pdir = project / ".dream" / "providers" / "moving"
    before = SSHTarget("127.0.0.1", "me", 2022)
    daemon_host.write(pdir, False, before, "prv-x", "--host")
    rec = Recorder()
    res = connect("moving", host="me@127.0.0.2:2023", cwd=project, shell_factory=rec)
    assert rec.targets == [before, SSHTarget("127.0.0.2", "me", 2023)]
    assert (res.status, res.kind) == ("error", "ssh_unreachable")
    rec = Recorder()
    connect("moving", host="me@127.0.0.1:2022", cwd=project, shell_factory=rec)
    assert rec.targets == [before]  # the same host: nothing to take down elsewhere
