"""The real Automation API adapter (``PulumiAutomation``) driven against
``PulumiCLIDouble``.

``PulumiCLIDouble`` is a TEST DOUBLE for the pulumi CLI binary (which cannot be
installed here). It replaces only the process boundary: ``pulumi.automation``'s
own LocalWorkspace and Stack code builds every argv, environment and event-log
path for real, and failures come back through the SDK's own
``create_command_error`` from the exact stderr the CLI prints.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.backends.pulumi import PulumiBackend
from dreamlake.engine.backends.pulumi.automation import PulumiAutomation
from dreamlake.engine.contract import PlanCounts
from pulumi.automation import CommandResult, PulumiCommand
from pulumi.automation.errors import create_command_error
from pulumi_helpers import LOCAL_OK
from semver import VersionInfo

HISTORY = [
    {
        "kind": "update",
        "startTime": "2026-11-29T10:00:00.000000Z",
        "message": "",
        "environment": {},
        "config": {},
        "result": "succeeded",
        "endTime": "2026-11-29T10:00:01.000000Z",
        "version": 1,
        "resourceChanges": {"create": 1},
    }
]


class PulumiCLIDouble(PulumiCommand):
    """TEST DOUBLE for the pulumi CLI binary (see the module docstring)."""

    def __init__(self, changes: dict[str, int], fail: dict[str, CommandResult] | None = None):
        # PulumiCommand.__init__ runs `pulumi version`; there is no binary to run.
        self.command = "pulumi"
        self.version = VersionInfo(3, 200, 0)  # < 3.205: the SDK reads a file event log
        self.changes = changes
        self.fail = fail or {}
        self.calls: list[tuple[list[str], str, dict[str, str]]] = []

    def run(self, args, cwd, additional_env, on_output=None, on_error=None):  # type: ignore[override]
        args = list(args)
        self.calls.append((args, cwd, dict(additional_env)))
        verb = args[0] if args[0] not in ("stack",) else " ".join(args[:2])
        if verb in self.fail:
            raise create_command_error(self.fail[verb])
        out = ""
        if "--event-log" in args:
            log = Path(args[args.index("--event-log") + 1])
            event = {
                "sequence": 1,
                "timestamp": 1,
                "summaryEvent": {
                    "maybeCorrupt": False,
                    "durationSeconds": 0,
                    "resourceChanges": self.changes,
                },
            }
            done = {"sequence": 2, "timestamp": 1, "cancelEvent": {}}  # the CLI's last event
            with log.open("a") as fh:
                fh.write(json.dumps(event) + "\n" + json.dumps(done) + "\n")
        if verb == "stack output":
            out = json.dumps({"worker_host": "localhost"})
        elif verb == "stack history":
            out = json.dumps(HISTORY)
        if on_output and verb in ("preview", "up"):
            on_output(f"{verb} ok\n")
        return CommandResult(stdout=out, stderr="", code=0)

    def argv(self, verb: str) -> list[str]:
        return next(a for a, _, _ in self.calls if a[0] == verb)


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stub = bindir / "pulumi"  # TEST DOUBLE file: found on PATH, never run
    stub.write_text("#!/bin/sh\nexit 99\n")
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    return {"PATH": str(bindir), "PULUMI_HOME": str(tmp_path / "pulumi-home")}


def _backend(cli: PulumiCLIDouble, env: dict[str, str]) -> PulumiBackend:
    return PulumiBackend(PulumiAutomation(pulumi_command=cli), environ=env)


def test_preview_and_up_argv_and_env(provider, cli_env: dict[str, Any]) -> None:
    d = provider(config=LOCAL_OK)
    cli = PulumiCLIDouble({"create": 2, "same": 1})
    backend = _backend(cli, {**cli_env, "PULUMI_EXPERIMENTAL": "1"})
    out = backend.plan(d)
    assert out.result == "ok" and out.plan == PlanCounts(add=2, change=0, destroy=0)

    select = cli.calls[0][0]
    assert select[:2] == ["stack", "select"] and "lab" in select
    preview = cli.argv("preview")
    saved = str(d / "pulumi" / "update.plan.json")
    assert preview[preview.index("--save-plan") + 1] == saved
    assert preview[preview.index("--stack") + 1] == "lab"
    assert preview[preview.index("--exec-kind") + 1] == "auto.inline"
    assert any(a.startswith("--client=127.0.0.1:") for a in preview)
    for _args, cwd, env in cli.calls:
        assert cwd == str(d / "pulumi")
        assert env["PULUMI_BACKEND_URL"] == f"file://{d / 'pulumi' / '.state'}"
        assert env["PULUMI_CONFIG_PASSPHRASE_FILE"] == str(d / "pulumi" / ".passphrase")
        assert env["PULUMI_SKIP_UPDATE_CHECK"] == "true"

    # The double saved no plan file, so apply runs a plain `up`.
    assert backend.apply(d).result == "applied"
    up = cli.argv("up")
    assert up[:3] == ["up", "--yes", "--skip-preview"] and "--plan" not in up
    assert up[up.index("--stack") + 1] == "lab"


def test_missing_stack_is_created(provider, cli_env: dict[str, Any]) -> None:
    d = provider(config=LOCAL_OK)
    missing = CommandResult(stdout="", stderr="error: no stack named 'lab' found", code=255)
    cli = PulumiCLIDouble({"same": 1}, fail={"stack select": missing})
    assert _backend(cli, cli_env).plan(d).result == "ok"
    assert [a[:2] for a, _, _ in cli.calls][:2] == [["stack", "select"], ["stack", "init"]]


def test_lock_message_from_the_cli_is_applying(provider, cli_env: dict[str, Any]) -> None:
    d = provider(config=LOCAL_OK)
    stderr = (
        "error: the stack is currently locked by 1 lock(s). Either wait for the other "
        "process(es) to end or delete the lock file with `pulumi cancel`.\n"
        f"  file://{d}/pulumi/.state/.pulumi/locks/organization/dreamlake/lab/1f.json: "
        "created by alice@box (pid 77) at 2026-11-29T10:00:00Z\n"
    )
    cli = PulumiCLIDouble({"same": 1}, fail={"up": CommandResult("", stderr, 255)})
    backend = _backend(cli, cli_env)
    backend.plan(d)
    out = backend.apply(d)
    assert out.result == "applying" and out.lock is not None
    assert out.lock.who == "alice@box (pid 77)" and out.lock.state == "held"


def test_real_adapter_program_is_the_scaffolded_main(provider, cli_env: dict[str, Any]) -> None:
    """The inline program the adapter hands the SDK runs pulumi/__main__.py."""
    from dreamlake.engine.backends.pulumi.automation import inline_program

    d = provider(config=LOCAL_OK)
    marker = d / "ran"
    (d / "pulumi" / "__main__.py").write_text(
        f"import sibling\nopen({str(marker)!r}, 'w').write(__name__ + ' ' + sibling.X)\n"
    )
    (d / "pulumi" / "sibling.py").write_text("X = 'ok'\n")
    inline_program(d / "pulumi" / "__main__.py")()
    assert marker.read_text() == "__main__ ok"
