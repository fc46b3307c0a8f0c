"""Helpers for the pulumi backend tests: the shared fixture files laid out as a
file backend, scaffolded provider directories, and ``FakeAutomation``.

``FakeAutomation`` is a TEST DOUBLE for the Automation API session (the flows
through the SDK itself run against the stand-in CLI in
``test_pulumi_automation.py``): it stands in for ``PulumiAutomation`` (preview/up),
records every ``StackRequest`` it is given, and fails with the Automation API's own
exception types (see :func:`error`). On ``up`` it writes a checkpoint into the file
backend, as the CLI would, so ``observe_state`` reads it.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dreamlake.engine.backends.pulumi.automation import PreviewSummary, StackRequest, UpSummary
from dreamlake.engine.backends.pulumi.scaffold import scaffold_files
from dreamlake.engine.world.record import ProviderRecord
from dreamlake.engine.world.vendors import get_template
from shared_fixtures import UPSTREAM_PULUMI

# Files only the pulumi CLI writes: the upstream corpus when present (see shared_fixtures).
FIXTURES = UPSTREAM_PULUMI or Path("shared/fixtures/pulumi (absent)")


def write_provider(
    root: Path,
    name: str = "lab",
    vendor: str = "local",
    config: dict[str, object] | None = None,
    settings: dict[str, object] | None = None,
) -> Path:
    """A scaffolded pulumi provider dir; ``config`` replaces the stack file's config."""
    d = root / ".dream" / "providers" / name
    for rel, data in scaffold_files(get_template(vendor), name).items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    rec = ProviderRecord(
        name=name,
        vendor=vendor,
        backend="pulumi",
        template_version=1,
        engine_version="test",
        settings=settings or {},
    )
    (d / "provider.json").write_text(rec.to_json())
    if config is not None:
        lines = ["config:"] + [f"  dreamlake:{k}: {json.dumps(v)}" for k, v in config.items()]
        (d / "pulumi" / f"Pulumi.{name}.yaml").write_text("\n".join(lines) + "\n")
    return d


LOCAL_OK = {"workdir": "/var/lib/nymph", "queues": ["default"], "worker_name": "lab-box"}


def lay_out(
    backend_root: Path,
    source: Path,
    *,
    project: str | None = "dreamlake",
    stack: str = "lab",
    suffix: str = ".json",
    data: bytes | None = None,
) -> Path:
    """Place a checkpoint as the file backend would: project-scoped when ``project``
    is given (with meta.yaml version 1), else the legacy layout."""
    pul = backend_root / ".pulumi"
    if project:
        (pul).mkdir(parents=True, exist_ok=True)
        (pul / "meta.yaml").write_text("version: 1\n")
        dest = pul / "stacks" / project / f"{stack}{suffix}"
    else:
        dest = pul / "stacks" / f"{stack}{suffix}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    if data is not None:
        dest.write_bytes(data)
    else:
        shutil.copyfile(source, dest)
        dest.chmod(0o644)
    return dest


def error(stderr: str = "", stdout: str = "", code: int = 255) -> Exception:
    """A failure as the Automation API raises it: its own classification of the
    CLI's result (``create_command_error``), built for real."""
    from pulumi.automation import CommandResult
    from pulumi.automation.errors import create_command_error

    return create_command_error(CommandResult(stdout=stdout, stderr=stderr, code=code))


@dataclass
class FakeAutomation:
    """TEST DOUBLE for the pulumi CLI behind the Automation API (see module docstring)."""

    changes: dict[str, int] = field(default_factory=lambda: {"same": 1, "create": 0})
    preview_error: Exception | None = None
    up_error: Exception | None = None
    pending_on_failure: bool = False
    requests: list[StackRequest] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def open(self, request: StackRequest) -> FakeAutomation:
        self.requests.append(request)
        return self

    def preview(self, *, save_plan: str | None = None, on_output: Any = None) -> PreviewSummary:
        self.calls.append(("preview", {"save_plan": save_plan}))
        if on_output:
            on_output("Previewing update (lab):\n")
        if self.preview_error:
            raise self.preview_error
        if save_plan:
            Path(save_plan).write_text("{}")
        return PreviewSummary(dict(self.changes))

    def up(self, *, plan: str | None = None, on_output: Any = None) -> UpSummary:
        self.calls.append(("up", {"plan": plan}))
        req = self.requests[-1]
        root = Path(req.env["PULUMI_BACKEND_URL"].removeprefix("file://"))
        stack_res = {
            "urn": "urn:pulumi:lab::dreamlake::pulumi:pulumi:Stack::dreamlake-lab",
            "custom": False,
            "type": "pulumi:pulumi:Stack",
            "outputs": {"worker_host": "localhost"},
        }
        latest: dict[str, Any] = {"manifest": {}, "resources": [stack_res]}
        if self.up_error:
            if self.pending_on_failure:
                latest["pending_operations"] = [
                    {"resource": {"urn": "urn:pulumi:lab::dreamlake::x:y:Z::w"}, "type": "creating"}
                ]
                lay_out(
                    root,
                    Path("x"),
                    stack=req.stack,
                    data=json.dumps(
                        {
                            "version": 3,
                            "checkpoint": {"stack": "organization/dreamlake/lab", "latest": latest},
                        }
                    ).encode(),
                )
            raise self.up_error
        lay_out(
            root,
            Path("x"),
            stack=req.stack,
            data=json.dumps(
                {
                    "version": 3,
                    "checkpoint": {"stack": "organization/dreamlake/lab", "latest": latest},
                }
            ).encode(),
        )
        return UpSummary({"create": 0, "same": 1}, {"worker_host": "localhost"})

    def refresh(
        self, *, clear_pending_creates: bool = False, on_output: Any = None
    ) -> dict[str, int]:
        self.calls.append(("refresh", {"clear_pending_creates": clear_pending_creates}))
        return {}

    def preview_destroy(self, *, on_output: Any = None) -> PreviewSummary:
        self.calls.append(("preview_destroy", {}))
        return PreviewSummary({"delete": 1})

    def destroy(self, *, on_output: Any = None) -> dict[str, int]:
        self.calls.append(("destroy", {}))
        return {"delete": 1}

    def cancel(self) -> None:
        self.calls.append(("cancel", {}))

    def export_stack(self) -> dict[str, Any]:
        self.calls.append(("export_stack", {}))
        return {"version": 3, "deployment": {}}

    def import_stack(self, state: dict[str, Any]) -> None:
        self.calls.append(("import_stack", {}))
