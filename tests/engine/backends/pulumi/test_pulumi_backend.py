"""plan / apply through the Automation API seam, with ``FakeAutomation``
(defined in ``pulumi_helpers``).

``FakeAutomation`` is a TEST DOUBLE for the pulumi CLI, which cannot be installed
here: it stands in for ``PulumiAutomation`` (``create_or_select_stack`` + preview/up),
records every ``StackRequest`` it is given, and fails with the Automation API's own
exception types, built for real by ``pulumi.automation.errors.create_command_error``
from a ``CommandResult`` carrying the CLI's real messages. On ``up`` it writes a
checkpoint into the file backend, as the CLI would, so ``observe_state`` reads it.
"""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest
from dreamlake.engine.backends.pulumi import PulumiBackend, counts_from
from dreamlake.engine.backends.pulumi.project import PulumiProject
from dreamlake.engine.contract.errors import BackendError, BinaryMissing
from dreamlake.engine.contract.result import PlanCounts, Shell
from pulumi_helpers import LOCAL_OK, FakeAutomation, error

LOCK_MSG = (
    "error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) "
    "to end or delete the lock file with `pulumi cancel`.\n"
    "  file:///x/.pulumi/locks/organization/dreamlake/lab/0b9e.json: created by bob@box "
    "(pid 4242) at 2026-11-29T10:00:00Z\n"
)


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """PATH holding a stub ``pulumi`` (a TEST DOUBLE file: it is found, never run)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stub = bindir / "pulumi"
    stub.write_text("#!/bin/sh\nexit 99\n")
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    return {"PATH": str(bindir), "PULUMI_HOME": str(tmp_path / "pulumi-home")}


def test_plan_needs_input_without_touching_pulumi(provider) -> None:
    d = provider()  # the scaffold as written: decisions unresolved
    fake = FakeAutomation()
    out = PulumiBackend(fake, environ={"PATH": ""}).plan(d)
    assert out.result == "needs_input"
    assert {b.key for b in out.blocking} == {"workdir", "queues", "worker_name"}
    assert fake.requests == []


def test_plan_without_cli_is_binary_missing_with_install(provider, tmp_path: Path) -> None:
    d = provider(config=LOCAL_OK)
    env = {"PATH": str(tmp_path / "empty"), "PULUMI_HOME": str(tmp_path / "nohome")}
    with pytest.raises(BinaryMissing) as ei:
        PulumiBackend(FakeAutomation(), environ=env).plan(d)
    assert ei.value.kind == "no_binary"
    # installing software is a person's call (flagged), by the SDK's own installer
    nxt = ei.value.next_action
    assert isinstance(nxt, Shell) and nxt.approval is True
    assert "PulumiCommand.install()" in nxt.command


def test_plan_ok_builds_the_request_and_records_a_fresh_plan(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    fake = FakeAutomation(changes={"create": 2, "update": 1, "same": 3})
    backend = PulumiBackend(fake, environ=cli_env)
    lines: list[str] = []
    out = backend.plan(d, progress=lines.append)
    assert out.result == "ok" and out.plan == PlanCounts(add=2, change=1, destroy=0)
    assert lines == ["Previewing update (lab):\n"]
    (req,) = fake.requests
    assert req.stack == PulumiProject.of(d).stack and req.stack.startswith("lab-dir-")
    assert req.project == "dreamlake" and req.config_file == d / "pulumi" / "Pulumi.lab.yaml"
    assert req.work_dir == d / "pulumi" and req.main == d / "pulumi" / "__main__.py"
    assert req.cli == Path(cli_env["PATH"]) / "pulumi"
    assert req.env["PULUMI_BACKEND_URL"] == f"file://{d / 'pulumi' / '.state'}"
    assert req.env["PULUMI_SKIP_UPDATE_CHECK"] == "true"
    pp = Path(req.env["PULUMI_CONFIG_PASSPHRASE_FILE"])
    assert pp == d / "pulumi" / ".passphrase"
    assert stat.S_IMODE(pp.stat().st_mode) == 0o600 and len(pp.read_text().strip()) >= 32
    assert (d / "pulumi" / ".state").is_dir()
    assert fake.calls == [("preview", {"save_plan": None})]  # no experimental CLI: no --save-plan
    assert "PULUMI_EXPERIMENTAL" not in req.env
    assert out.files == (str(d / "pulumi" / "summary.plan.json"),)
    st = backend.observe_state(d)
    assert st.plan_fresh and st.plan == out.plan
    # editing the stack config makes the plan stale
    sf = d / "pulumi" / "Pulumi.lab.yaml"
    sf.write_text(sf.read_text().replace("lab-box", "lab-box-2"))
    assert not backend.observe_state(d).plan_fresh


def test_plan_keeps_a_passphrase_from_the_environment(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    fake = FakeAutomation()
    PulumiBackend(fake, environ={**cli_env, "PULUMI_CONFIG_PASSPHRASE": ""}).plan(d)
    assert "PULUMI_CONFIG_PASSPHRASE_FILE" not in fake.requests[0].env
    assert not (d / "pulumi" / ".passphrase").exists()


def test_plan_saves_an_update_plan_when_the_cli_supports_it(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    fake = FakeAutomation()
    backend = PulumiBackend(fake, environ={**cli_env, "PULUMI_EXPERIMENTAL": "true"})
    out = backend.plan(d)
    saved = str(d / "pulumi" / "update.plan.json")
    assert fake.calls == [("preview", {"save_plan": saved})]
    assert fake.requests[-1].env["PULUMI_EXPERIMENTAL"] == "true"
    assert saved in out.files
    assert backend.apply(d).result == "applied"
    assert fake.calls[-1] == ("up", {"plan": saved})


def test_backend_url_env_and_settings(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    fake = FakeAutomation()
    PulumiBackend(fake, environ={**cli_env, "PULUMI_BACKEND_URL": "s3://b/p"}).plan(d)
    assert fake.requests[-1].env["PULUMI_BACKEND_URL"] == "s3://b/p"
    d2 = provider(
        name="lab2", config=LOCAL_OK, settings={"pulumi": {"backendUrl": "gs://team-state"}}
    )
    PulumiBackend(fake, environ={**cli_env, "PULUMI_BACKEND_URL": "s3://b/p"}).plan(d2)
    assert fake.requests[-1].env["PULUMI_BACKEND_URL"] == "gs://team-state"


def test_counts_from_change_summary() -> None:
    assert counts_from(
        {
            "create": 1,
            "replace": 2,
            "delete": 1,
            "update": 3,
            "same": 9,
            "create-replacement": 2,
            "delete-replaced": 2,
            "read": 4,
        }
    ) == PlanCounts(add=3, change=3, destroy=3)


def test_missing_config_reported_by_the_cli_is_needs_input(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    err = error(
        stderr="error: Missing required configuration variable 'dreamlake:workdir'\n"
        "    please set a value using the command `pulumi config set dreamlake:workdir <value>`"
    )
    out = PulumiBackend(FakeAutomation(preview_error=err), environ=cli_env).plan(d)
    assert out.result == "needs_input"
    (b,) = out.blocking
    assert (b.key, b.reason, b.line) == ("workdir", "unset", 2)


def test_program_config_error_is_needs_input(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    err = error(
        stdout="python inline source runtime error: dreamlake config: queues: "
        "List at least one queue\n"
    )
    assert type(err).__name__ == "InlineSourceRuntimeError"
    out = PulumiBackend(FakeAutomation(preview_error=err), environ=cli_env).plan(d)
    assert out.result == "needs_input"
    assert [(b.key, b.reason, b.message) for b in out.blocking] == [
        ("queues", "invalid", "List at least one queue")
    ]


@pytest.mark.parametrize(
    ("result", "name"),
    [
        (dict(stdout="error: an unhandled error occurred: boom", code=1), "RuntimeError"),
        (dict(stderr="error: no stack named 'lab' found", code=255), "StackNotFoundError"),
        (dict(stderr="error: provider crashed", code=255), "CommandError"),
        (dict(stdout="main.go:1: syntax error: x", code=1), "CompilationError"),
    ],
)
def test_other_failures_are_backend_errors(provider, cli_env, result, name) -> None:
    d = provider(config=LOCAL_OK)
    err = error(**result)
    assert type(err).__name__ == name
    with pytest.raises(BackendError) as ei:
        PulumiBackend(FakeAutomation(preview_error=err), environ=cli_env).plan(d)
    assert ei.value.kind == "pulumi" and ei.value.argv == ["pulumi", "preview"]
    assert ei.value.returncode == result["code"]
    assert ei.value.stderr_tail
    assert ei.value.__cause__ is err
    assert not (d / "pulumi" / "summary.plan.json").exists()


def test_apply_without_a_fresh_plan_does_not_run_up(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    fake = FakeAutomation()
    out = PulumiBackend(fake, environ=cli_env).apply(d)
    assert out.result == "no_plan" and "run plan" in out.reason
    assert fake.calls == []


def test_apply_after_plan_is_applied_and_state_is_present(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    fake = FakeAutomation()
    backend = PulumiBackend(fake, environ=cli_env)
    backend.plan(d)
    out = backend.apply(d)
    assert out.result == "applied"
    assert fake.calls[-1] == ("up", {"plan": None})
    st = backend.observe_state(d)
    assert st.present and st.resources == 0 and st.outputs == {"worker_host": "localhost"}
    assert not st.plan_fresh  # an apply consumes the plan
    assert backend.outputs(d) == {"worker_host": "localhost"}


def test_concurrent_update_is_applying_with_the_lock(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    err = error(stderr=LOCK_MSG)
    assert type(err).__name__ == "ConcurrentUpdateError"
    fake = FakeAutomation(up_error=err)
    backend = PulumiBackend(fake, environ=cli_env)
    backend.plan(d)
    out = backend.apply(d)
    assert out.result == "applying" and out.lock is not None
    assert out.lock.state == "held" and out.lock.who == "bob@box (pid 4242)"
    assert out.lock.since == "2026-11-29T10:00:00Z"


def test_conflict_409_from_the_service_is_applying(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    err = error(stderr="error: [409] Conflict: Another update is currently in progress.")
    backend = PulumiBackend(FakeAutomation(up_error=err), environ=cli_env)
    backend.plan(d)
    out = backend.apply(d)
    assert out.result == "applying" and out.lock is not None and out.lock.state == "held"


def test_failed_up_leaving_pending_operations_is_applying(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    fake = FakeAutomation(up_error=error(stderr="error: update failed"), pending_on_failure=True)
    backend = PulumiBackend(fake, environ=cli_env)
    backend.plan(d)
    out = backend.apply(d)
    assert out.result == "applying" and out.lock is not None and out.lock.state == "stale"
    assert "--clear-pending-creates" in (out.lock.detail or "")
    # and re-running apply never runs up while they are there
    fake.calls.clear()
    assert backend.apply(d).result == "applying" and fake.calls == []


def test_failed_up_otherwise_is_a_backend_error(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK)
    backend = PulumiBackend(FakeAutomation(up_error=error(stderr="error: quota")), environ=cli_env)
    backend.plan(d)
    with pytest.raises(BackendError) as ei:
        backend.apply(d)
    assert ei.value.kind == "pulumi" and ei.value.argv == ["pulumi", "up"]


def test_a_held_lock_stops_apply_before_up(provider, cli_env, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    fake = FakeAutomation()
    backend = PulumiBackend(fake, environ=cli_env)
    backend.plan(d)
    lock_dir = d / "pulumi/.state/.pulumi/locks/organization/dreamlake" / PulumiProject.of(d).stack
    (d / "pulumi/.state/.pulumi").mkdir(parents=True, exist_ok=True)
    (d / "pulumi/.state/.pulumi/meta.yaml").write_text("version: 1\n")
    lock_dir.mkdir(parents=True)
    (lock_dir / "a.json").write_text(
        json.dumps(
            {
                "pid": os.getpid(),
                "username": "me",
                "hostname": socket.gethostname(),
                "timestamp": "2026-11-29T10:00:00Z",
            }
        )
    )
    out = backend.apply(d)
    assert out.result == "applying" and out.lock is not None and out.lock.state == "held"
    assert ("up", {"plan": None}) not in fake.calls


def test_backend_is_registered() -> None:
    from dreamlake.engine.backends import get_backend

    assert get_backend("pulumi").name == "pulumi"


@pytest.mark.parametrize(
    "exc",
    [
        pytest.param(None, id="InvalidVersionError"),
        pytest.param(FileNotFoundError(2, "No such file or directory", "pulumi"), id="no-binary"),
    ],
)
def test_cli_that_cannot_run_is_binary_missing(exc: Exception | None) -> None:
    from dreamlake.engine.backends.pulumi.errors import classify
    from pulumi.automation.errors import InvalidVersionError

    err = exc or InvalidVersionError("Minimum version requirement failed: 3.0.0 < 3.100.0")
    failure = classify(err, op="preview")
    assert failure.kind == "other" and isinstance(failure.error, BinaryMissing)
    nxt = failure.error.next_action
    assert isinstance(nxt, Shell) and nxt.approval is True  # installing: a person's call
    assert "PulumiCommand.install()" in nxt.command


def test_save_plan_setting_in_provider_json(provider, cli_env) -> None:
    d = provider(config=LOCAL_OK, settings={"pulumi": {"savePlan": True}})
    fake = FakeAutomation()
    PulumiBackend(fake, environ=cli_env).plan(d)
    assert fake.calls == [("preview", {"save_plan": str(d / "pulumi" / "update.plan.json")})]
    assert fake.requests[-1].env["PULUMI_EXPERIMENTAL"] == "true"
