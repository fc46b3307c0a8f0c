"""The Automation API flows — preview, up, refresh, cancel on a stale lock,
export before recovery, destroy — driven through the SDK's own LocalWorkspace /
Stack / PulumiCommand code up to the process boundary, where a STAND-IN for the
``pulumi`` CLI (``pulumi_cli_standin.py``, put first on PATH as ``pulumi``) speaks
the protocol of the CLI version the installed SDK expects: it streams engine
events over gRPC and runs the inline program through the SDK's language server.

The journey test also runs against the real ``pulumi`` CLI wherever one is on
PATH (the ``real`` parameter); here it is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from dreamlake.engine.backends.pulumi import PulumiBackend
from dreamlake.engine.backends.pulumi.project import PulumiProject
from dreamlake.engine.backends.pulumi.state import BackendFiles
from dreamlake.engine.contract.errors import BackendError
from dreamlake.engine.contract.result import PlanCounts
from pulumi_helpers import LOCAL_OK, write_provider

pytestmark = pytest.mark.slow

STANDIN = Path(__file__).with_name("pulumi_cli_standin.py")


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``<tmp>/cli/bin/pulumi`` runs the stand-in; first on PATH. Returns its argv log."""
    bindir = tmp_path / "cli" / "bin"
    bindir.mkdir(parents=True)
    script = bindir / "pulumi"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDIN}" "$@"\n')
    script.chmod(0o755)
    log = tmp_path / "argv.jsonl"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PULUMI_STANDIN_LOG", str(log))
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "pulumi-home"))
    return log


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line)["argv"] for line in log.read_text().splitlines()]


def verbs(log: Path) -> list[str]:
    out = []
    for argv in calls(log):
        pos = [a for a in argv if not a.startswith("--")]
        out.append(" ".join(pos[:2]) if pos and pos[0] == "stack" else (pos[0] if pos else ""))
    return out


def flag(argv: list[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == name:
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


@pytest.fixture(params=["standin", "real"])
def cli(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "real":
        if shutil.which("pulumi") is None:
            pytest.skip("needs the pulumi CLI on PATH: this journey runs for real there")
        monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "pulumi-home"))
        return "real"
    request.getfixturevalue("standin")
    return "standin"


def test_plan_apply_destroy_journey(cli: str, tmp_path: Path) -> None:
    d = write_provider(tmp_path, config=LOCAL_OK)
    backend = PulumiBackend()
    lines: list[str] = []
    out = backend.plan(d, progress=lines.append)
    assert out.result == "ok", out
    assert out.plan == PlanCounts(add=2, change=0, destroy=0)  # the stack and the component
    assert any("would create dreamlake:local:LocalWorker dreamlake" in x for x in lines), lines
    assert backend.observe_state(d).plan_fresh

    assert backend.apply(d, progress=lines.append).result == "applied"
    state = backend.observe_state(d)
    assert state.present and state.lock is None and state.resources == 0
    # the real program ran: its outputs are the stack's
    assert state.outputs["worker_host"] == "localhost"
    assert state.outputs["daemon_args"] == [  # the provider: the folder above the program
        "nymph",
        "--provider",
        "lab",
        "--instance-id",
        "lab-box",
        "--workdir",
        "/var/lib/nymph",
        "--queues",
        "default",
    ]

    again = backend.plan(d)
    assert again.plan == PlanCounts(add=0, change=0, destroy=0)

    preview = backend.destroy(d, yes=False)
    assert preview.result == "preview" and preview.plan is not None and preview.plan.destroy == 2
    assert backend.observe_state(d).present  # a preview changes nothing
    done = backend.destroy(d, yes=True)
    assert done.result == "destroyed"
    assert not backend.observe_state(d).present


def test_argv_env_and_stack_identity(standin: Path, tmp_path: Path) -> None:
    d = write_provider(tmp_path, config=LOCAL_OK)
    PulumiBackend(environ={**os.environ, "PULUMI_EXPERIMENTAL": "1"}).plan(d)
    project = PulumiProject.of(d)
    assert project.stack.startswith("lab-dir-") and project.config_name == "lab"
    argv = calls(standin)
    assert verbs(standin)[:3] == ["version", "stack select", "stack init"]
    assert flag(argv[1], "--stack") == project.stack
    preview = next(a for a in argv if "preview" in a)
    assert preview[0] == "--non-interactive"
    assert flag(preview, "--config-file") == str(d / "pulumi" / "Pulumi.lab.yaml")
    assert flag(preview, "--save-plan") == str(d / "pulumi" / "update.plan.json")
    assert flag(preview, "--exec-kind") == "auto.inline"
    assert (flag(preview, "--event-log") or "").startswith("tcp://127.0.0.1:")
    assert (flag(preview, "--client") or "").startswith("127.0.0.1:")
    env = json.loads(standin.read_text().splitlines()[-1])["env"]
    assert env["PULUMI_BACKEND_URL"] == f"file://{d / 'pulumi' / '.state'}"
    assert env["PULUMI_CONFIG_PASSPHRASE_FILE"] == str(d / "pulumi" / ".passphrase")
    assert env["PULUMI_SKIP_UPDATE_CHECK"] == "true"


def test_program_config_check_is_needs_input(standin: Path, tmp_path: Path) -> None:
    """The program's own rule fails the run; the SDK raises its typed error and the
    key comes back as a blocking decision."""
    d = write_provider(tmp_path, config=LOCAL_OK)
    (d / "pulumi" / "__main__.py").write_text(
        "from dreamlake.stacks.local import ConfigError\n"
        "raise ConfigError('dreamlake config: workdir: must be under /srv here')\n"
    )
    out = PulumiBackend().plan(d)
    assert out.result == "needs_input"
    assert [(b.key, b.reason, b.message) for b in out.blocking] == [
        ("workdir", "invalid", "must be under /srv here")
    ]


def _lock(d: Path, pid: int, host: str | None = None) -> Path:
    project = PulumiProject.of(d)
    files = BackendFiles.open(project.default_state_dir, project.stack_project, project.stack_short)
    files.lock_dir.mkdir(parents=True, exist_ok=True)
    path = files.lock_dir / "5a1e.json"
    path.write_text(
        json.dumps(
            {
                "pid": pid,
                "username": "alice",
                "hostname": host or os.uname().nodename,
                "timestamp": "2026-11-30T09:00:00Z",
            }
        )
    )
    return path


def _dead_pid() -> int:
    import subprocess

    p = subprocess.Popen([sys.executable, "-c", ""])
    p.wait()
    return p.pid


def test_plan_recovers_a_stale_lock_with_cancel_after_an_export(
    standin: Path, tmp_path: Path
) -> None:
    d = write_provider(tmp_path, config=LOCAL_OK)
    backend = PulumiBackend()
    backend.plan(d)
    assert backend.apply(d).result == "applied"
    lock = _lock(d, _dead_pid())
    state = backend.observe_state(d)
    assert state.lock is not None and state.lock.state == "stale"
    # apply is never a recovery: it reports, and changes nothing
    assert backend.apply(d).result == "applying" and lock.exists()

    lines: list[str] = []
    out = backend.plan(d, progress=lines.append)
    assert out.result == "ok" and not lock.exists()
    seq = verbs(standin)
    assert (
        seq.index("stack export") < seq.index("cancel") < len(seq) - 1 - seq[::-1].index("preview")
    )
    backup = Path(out.files[0])
    assert backup.parent.name == "backups" and backup.stat().st_mode & 0o777 == 0o600
    assert json.loads(backup.read_text())["deployment"]["resources"]
    assert any("pulumi cancel" in x for x in lines)
    assert backend.apply(d).result == "applied"


def test_a_held_lock_is_left_alone_and_up_is_refused_by_the_sdk(
    standin: Path, tmp_path: Path
) -> None:
    """A live lock: plan does not cancel it; the SDK's own ConcurrentUpdateError
    (from the CLI's refusal) is classified as a lock."""
    from dreamlake.engine.backends.pulumi.automation import PulumiAutomation
    from dreamlake.engine.backends.pulumi.errors import classify
    from pulumi.automation.errors import ConcurrentUpdateError

    d = write_provider(tmp_path, config=LOCAL_OK)
    backend = PulumiBackend()
    backend.plan(d)
    lock = _lock(d, os.getpid())
    assert backend.observe_state(d).lock.state == "held"  # type: ignore[union-attr]
    backend.plan(d)
    assert lock.exists() and "cancel" not in verbs(standin)

    _, request = backend._request(d)
    session = PulumiAutomation().open(request)
    with pytest.raises(ConcurrentUpdateError) as ei:
        session.up()
    failure = classify(ei.value, op="up")
    assert failure.kind == "lock" and failure.lock is not None
    assert failure.lock.who == f"alice@{os.uname().nodename} (pid {os.getpid()})"
    held = backend.destroy(d, yes=True)
    assert held.result == "applying" and held.lock is not None


def _pending(d: Path, kind: str) -> None:
    project = PulumiProject.of(d)
    cp_path = next(project.default_state_dir.rglob(f"{project.stack_short}.json"))
    data = json.loads(cp_path.read_text())
    data["checkpoint"]["latest"]["pending_operations"] = [
        {"resource": {"urn": "urn:pulumi:x::dreamlake::aws:ec2/instance:Instance::w"}, "type": kind}
    ]
    cp_path.write_text(json.dumps(data))


def test_pending_updates_are_refreshed_by_plan(standin: Path, tmp_path: Path) -> None:
    d = write_provider(tmp_path, config=LOCAL_OK)
    backend = PulumiBackend()
    backend.plan(d)
    backend.apply(d)
    _pending(d, "updating")
    assert backend.observe_state(d).partial
    assert backend.plan(d).result == "ok"
    assert "refresh" in verbs(standin)
    assert not backend.observe_state(d).partial


def test_pending_creates_are_never_cleared_without_a_person(standin: Path, tmp_path: Path) -> None:
    d = write_provider(tmp_path, config=LOCAL_OK)
    backend = PulumiBackend()
    backend.plan(d)
    backend.apply(d)
    _pending(d, "creating")
    with pytest.raises(BackendError) as ei:
        backend.plan(d)
    nxt = ei.value.next_action
    assert ei.value.kind == "pending_creates" and nxt is not None and nxt.kind == "shell"
    assert nxt.approval is True and "refresh --yes --clear-pending-creates" in nxt.command  # type: ignore[union-attr]
    assert "refresh" not in verbs(standin)
    assert backend.observe_state(d).partial


def test_two_roots_on_one_backend_never_share_a_stack(
    standin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared-state"
    monkeypatch.setenv("PULUMI_BACKEND_URL", f"file://{shared}")
    a = write_provider(tmp_path / "team-a", config=LOCAL_OK)
    b = write_provider(tmp_path / "team-b", config={**LOCAL_OK, "worker_name": "other-box"})
    backend = PulumiBackend()
    for d in (a, b):
        assert backend.plan(d).result == "ok"
        assert backend.apply(d).result == "applied"
    sa, sb = PulumiProject.of(a).stack, PulumiProject.of(b).stack
    assert sa != sb and sa.startswith("lab-") and sb.startswith("lab-")
    assert sorted(
        p.name for p in (shared / ".pulumi" / "stacks" / "dreamlake").glob("*.json")
    ) == sorted([f"{sa}.json", f"{sb}.json"])
    assert backend.observe_state(a).outputs["worker_name"] == "lab-box"
    assert backend.observe_state(b).outputs["worker_name"] == "other-box"


def test_a_legacy_stack_on_the_private_backend_is_kept(standin: Path, tmp_path: Path) -> None:
    """Deployed before stacks carried the identity: its own file backend holds stack
    ``<name>``; that stack is still this provider's."""
    d = write_provider(tmp_path, config=LOCAL_OK)
    legacy = d / "pulumi" / ".state" / ".pulumi" / "stacks" / "dreamlake" / "lab.json"
    legacy.parent.mkdir(parents=True)
    (d / "pulumi" / ".state" / ".pulumi" / "meta.yaml").write_text("version: 1\n")
    legacy.write_text(
        json.dumps(
            {
                "version": 3,
                "checkpoint": {
                    "stack": "organization/dreamlake/lab",
                    "latest": {
                        "resources": [
                            {
                                "urn": "u",
                                "type": "pulumi:pulumi:Stack",
                                "custom": False,
                                "outputs": {"worker_host": "localhost"},
                            }
                        ]
                    },
                },
            }
        )
    )
    assert PulumiProject.of(d).stack == "lab"
    assert PulumiBackend().observe_state(d).present


def test_progress_is_made_from_engine_events(standin: Path, tmp_path: Path) -> None:
    d = write_provider(tmp_path, config=LOCAL_OK)
    backend = PulumiBackend()
    backend.plan(d)
    lines: list[str] = []
    backend.apply(d, progress=lines.append)
    assert "create … dreamlake:local:LocalWorker dreamlake" in lines
    assert "created dreamlake:local:LocalWorker dreamlake" in lines
    assert lines[-1].startswith("done in ") and "2 create" in lines[-1]
    assert not any("up:" in x for x in lines)  # not the CLI's display text


def test_export_and_import_round_trip_through_the_sdk(standin: Path, tmp_path: Path) -> None:
    """The recovery backup is what ``import_stack`` takes back."""
    from dreamlake.engine.backends.pulumi.automation import PulumiAutomation

    d = write_provider(tmp_path, config=LOCAL_OK)
    backend = PulumiBackend()
    backend.plan(d)
    backend.apply(d)
    _, request = backend._request(d)
    session = PulumiAutomation().open(request)
    saved = session.export_stack()
    assert saved["version"] == 3 and saved["deployment"]["resources"]
    backend.destroy(d, yes=True)
    assert not backend.observe_state(d).present
    session.import_stack(saved)
    assert backend.observe_state(d).outputs["worker_host"] == "localhost"
    assert "stack import" in verbs(standin)
