"""The drift check for the pulumi backend: ``preview --refresh`` through the
Automation API, which reads every resource again from the cloud and writes no
state; what it found changed is recorded beside the plan record
(``pulumi/drift.plan.json``), taken against the checkpoint it was compared with
(the digest of the file backend's checkpoint; ``remote`` for a state kept
elsewhere, which only the next check replaces).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ...backends.base import InfraState, Progress
from ...backends.driftrecord import DriftRecord, live_drift, write_drift
from ...contract import events
from ...contract.errors import BackendError, DreamlakeError
from ...contract.result import DriftedResource
from ...settings.records import replace
from ...world.record import now_utc
from .automation import Automation, StackRequest
from .driftevents import refresh_drift
from .project import PulumiProject
from .runtime import backend_url, local_root

DRIFT_FILE = "drift.plan.json"


def drift_path(provider_dir: Path) -> Path:
    return PulumiProject.of(provider_dir).dir / DRIFT_FILE


def checkpoint_key(
    project: PulumiProject, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The checkpoint a drift record is taken against: its digest (an update, a
    refresh or a destroy writes a new one)."""
    from .state import BackendFiles

    root = local_root(backend_url(project, environ), project)
    if root is None:
        return {"checkpoint": "remote"}
    files = BackendFiles.open(root, project.stack_project, project.stack_short)
    return {"checkpoint": files.state_digest()}


def with_drift(state: InfraState, provider_dir: Path) -> InfraState:
    """``state`` with the live drift record (none when absent or of another checkpoint)."""
    path = drift_path(provider_dir)
    if not path.exists():
        return state
    key = checkpoint_key(PulumiProject.of(provider_dir))
    return replace(state, drift=live_drift(path, key))


def check_drift(
    provider_dir: Path,
    *,
    progress: Progress | None = None,
    automation: Automation | None = None,
    environ: Mapping[str, str] | None = None,
) -> DriftRecord:
    """Run ``preview --refresh`` for the provider's stack and record what drifted."""
    from .adopt import not_ours
    from .errors import classify
    from .runtime import command_env, require_cli

    project = PulumiProject.of(provider_dir)
    if project.adopted:
        raise not_ours(provider_dir.name, project.stack, "preview --refresh")
    if not project.main.is_file():
        raise BackendError(
            f"{project.main} is missing: the pulumi backend runs the program there",
            argv=["pulumi"],
            kind="pulumi",
        )
    env = os.environ if environ is None else environ
    request = StackRequest(
        stack=project.stack,
        project=project.stack_project,
        work_dir=project.dir.absolute(),
        main=project.main.absolute(),
        env=command_env(project, env),
        cli=require_cli(env),
        config_file=project.stack_file.absolute(),
    )
    if automation is None:
        from .automation import PulumiAutomation

        automation = PulumiAutomation()
    against = checkpoint_key(project, request.env)  # before: see the terraform check
    try:
        session = automation.open(request)
        events.step("drift", "pulumi preview --refresh")
        seen = session.preview_refresh(on_output=progress)
    except DreamlakeError:
        raise
    except Exception as exc:
        failure = classify(exc, op="preview")
        raise failure.error or exc from exc
    found = refresh_drift(seen)
    stamp = now_utc()
    for d in found:
        events.emit(
            "resource_drift",
            address=d.address,
            action=d.action,
            message=f"{d.address}: drift detected ({d.action})",
        )
    record = DriftRecord(
        backend="pulumi",
        seen_at=stamp,
        state=against,
        resources=tuple(
            DriftedResource(
                address=d.address, action=d.action, attributes=list(d.attributes), seen_at=stamp
            )
            for d in found
        ),
    )
    return write_drift(drift_path(provider_dir), record)


__all__ = ["DRIFT_FILE", "check_drift", "checkpoint_key", "drift_path", "with_drift"]
