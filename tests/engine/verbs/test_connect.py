"""connect's decisions before any shell work: where the host comes from, what blocks,
and that no shell is opened when there is nothing to connect to. The shell factory
here records the target and refuses (a stand-in for SSH so no install happens; the
real journeys are in tests/e2e/test_connect_*.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.contract.errors import RemoteError
from dreamlake.engine.contract.result import Shell
from dreamlake.engine.remote.ssh import SSHTarget
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    """A control-plane token, so connect goes on to open the (recording) shell."""
    monkeypatch.setenv("LAKESHORE_TOKEN", "test-token")


class Recorder:
    """A shell factory that records each target and refuses like a rejected key."""

    def __init__(self) -> None:
        self.targets: list[Any] = []

    def __call__(self, target: Any) -> Any:
        self.targets.append(target)
        raise RemoteError(
            "refused", kind="ssh_auth", next_action=Shell(command="ssh-copy-id x", host="h")
        )


def _adopt(project: Path, name: str, **values: Any) -> Path:
    create(name, "ssh", cwd=project)
    path = project / ".dream" / "providers" / name / "adopt.json"
    data = json.loads(path.read_text())
    data.update(values)
    path.write_text(json.dumps(data))
    return path


def test_adopt_json_names_the_host(project: Path) -> None:
    _adopt(
        project,
        "lab",
        host="ops.internal",
        user="ops",
        port=2222,
        queues=["gpu"],
        identity_file="keys/id",
    )
    rec = Recorder()
    res = connect("lab", cwd=project, shell_factory=rec)
    assert rec.targets == [
        SSHTarget(
            "ops.internal", "ops", 2222, identity_file=str(project / ".dream/providers/lab/keys/id")
        )
    ]
    assert (res.status, res.kind, res.exit_code) == ("error", "ssh_auth", 1)
    assert res.next_action is not None and res.next_action.command == "ssh-copy-id x"
    assert res.host == "ops@ops.internal:2222"


def test_host_flag_wins_and_fills_what_adopt_json_lacks(project: Path) -> None:
    _adopt(project, "lab", queues=["gpu"], port=2200)  # host and user unset
    rec = Recorder()
    connect("lab", host="me@box", cwd=project, shell_factory=rec)
    assert rec.targets == [SSHTarget("box", "me", 2200)]
    rec = Recorder()
    connect("lab", host="me@box:22", cwd=project, shell_factory=rec)
    assert rec.targets[0].port == 22


def test_unresolved_adopt_decisions_need_input_without_a_shell(project: Path) -> None:
    _adopt(project, "lab")
    rec = Recorder()
    res = connect("lab", cwd=project, shell_factory=rec)
    assert res.status == "needs_input" and res.exit_code == 0
    assert {b.key for b in res.blocking or []} >= {"host", "user", "queues"}
    assert res.next_action is not None and res.next_action.kind == "edit_then_continue"
    assert res.next_action.command == "dreamlake provider connect -n lab"
    assert rec.targets == []
    # --host answers host, user and port, and nothing else: the queues are still a
    # blocking decision, so connect stops there too — no shell, nothing written, and
    # the next action is the same connect once they are chosen
    path = project / ".dream/providers/lab/adopt.json"
    before = path.read_bytes()
    res = connect("lab", host="me@box", cwd=project, shell_factory=rec)
    assert (res.status, [b.key for b in res.blocking or []]) == ("needs_input", ["queues"])
    assert res.next_action is not None and res.next_action.kind == "edit_then_continue"
    assert res.next_action.command == "dreamlake provider connect -n lab --host me@box"
    assert rec.targets == [] and path.read_bytes() == before
    # chosen: --host now goes on to the host (this connect is refused: nothing is written)
    data = json.loads(before)
    data["queues"] = ["gpu"]
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    res = connect("lab", host="me@box", cwd=project, shell_factory=rec)
    assert not res.blocking, res.to_json()
    assert rec.targets == [SSHTarget("box", "me", 22)]
    assert path.read_bytes() == before


def test_nothing_applied_yet_reports_the_derived_state(project: Path) -> None:
    create("loc", "local", cwd=project)
    rec = Recorder()
    res = connect("loc", cwd=project, shell_factory=rec)
    assert res.status == "needs_input" and res.exit_code == 0
    assert rec.targets == []
    assert any("nothing was started" in n for n in res.notes)


def test_unknown_provider_is_an_error_with_a_next_action(project: Path) -> None:
    res = connect("nope", cwd=project, shell_factory=Recorder())
    assert (res.status, res.kind) == ("error", "unknown_provider")
    assert res.next_action is not None


def test_bad_host_is_a_usage_error(project: Path) -> None:
    _adopt(project, "lab", user="u", queues=["q"])
    res = connect("lab", host="bad host", cwd=project, shell_factory=Recorder())
    assert res.status == "error" and res.exit_code == 1
    assert res.next_action is not None


@pytest.mark.parametrize("name", ["Bad", "-x"])
def test_bad_name(project: Path, name: str) -> None:
    res = connect(name, cwd=project, shell_factory=Recorder())
    assert (res.status, res.kind) == ("error", "usage")


def test_no_control_plane_token_stops_before_any_ssh(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without a token no daemon could claim: error before ssh, and a next action that
    returns (a foreground `lakeshore serve` would never hand control back)."""
    monkeypatch.delenv("LAKESHORE_TOKEN")
    monkeypatch.setenv("LAKESHORE_DATA_DIR", str(tmp_path / "no-server-data"))
    _adopt(project, "lab", host="ops.internal", user="ops", queues=["gpu"])
    rec = Recorder()
    res = connect("lab", cwd=project, shell_factory=rec)
    assert (res.status, res.kind, res.exit_code) == ("error", "no_lakeshore", 1)
    assert rec.targets == []
    assert isinstance(res.next_action, Shell) and res.next_action.command.endswith("&")


def test_a_failed_connect_host_writes_nothing(project: Path) -> None:
    """--host is kept in adopt.json only once connect started a daemon there: a
    refused key leaves the file byte for byte as it was."""
    path = _adopt(project, "lab", queues=["gpu"])  # host, user and port unset
    before = path.read_bytes()
    res = connect("lab", host="me@box:2222", cwd=project, shell_factory=Recorder())
    assert (res.status, res.kind) == ("error", "ssh_auth")
    assert path.read_bytes() == before
