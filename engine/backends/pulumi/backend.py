"""The Pulumi backend: the Backend protocol over Automation API stacks.

* ``observe_state`` reads the file backend directly (``state``): no CLI, no import
  of ``pulumi``.
* ``plan`` scans the stack config first (missing / invalid → ``needs_input``, no CLI
  needed), then runs ``stack.preview()`` — saving an update plan
  (``--save-plan``) when the CLI supports it (``PULUMI_EXPERIMENTAL`` or
  provider.json ``settings.pulumi.savePlan``) — and records the counts with a
  digest of the inputs and the state in ``pulumi/summary.plan.json``. That file is
  what makes ``ready`` derivable: it is fresh while neither changed.
* ``apply`` runs ``stack.up()`` only on a fresh plan and only when no lock and no
  pending operation is in the way; otherwise it reports ``applying`` (what holds
  the stack and what clears it) or ``no_plan``. It never runs as a recovery.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...contract import events
from ...contract.errors import BackendError, DreamlakeError
from ...contract.result import Blocking, LockInfo, Shell
from ...settings.fsutil import atomic_write
from ...world.paths import ProviderPaths
from ...world.record import now_utc, read_record
from ..base import ApplyOutcome, DestroyOutcome, InfraState, PlanOutcome, Progress
from .adopt import not_ours
from .automation import Automation, PulumiAutomation, StackRequest, StackSession
from .errors import classify
from .holds import legacy_note, lock_info, pending_info
from .planrecord import counts_from, has_changes, inputs_digest, read_summary, summary_counts
from .project import BACKUPS, PulumiProject
from .runtime import backend_url, cli_command, command_env, local_root, require_cli
from .state import (
    BackendFiles,
    StateUnreadable,
    counted_resources,
    leftovers,
    power_state,
    stack_outputs,
)

_TRUE = {"1", "true", "yes", "on"}


class PulumiBackend:
    """The ``pulumi`` backend. ``automation`` and ``environ`` are the seams."""

    name = "pulumi"

    def __init__(
        self,
        automation: Automation | None = None,
        environ: Mapping[str, str] | None = None,
        hostname: str | None = None,
    ) -> None:
        self._automation = automation
        self._environ = environ
        self._hostname = hostname

    @property
    def automation(self) -> Automation:
        if self._automation is None:
            self._automation = PulumiAutomation()
        return self._automation

    def _env(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    # -- reading ---------------------------------------------------------------------

    def observe_state(self, provider_dir: Path) -> InfraState:
        project = PulumiProject.of(provider_dir)
        env = self._env()
        url = backend_url(project, env)
        root = local_root(url, project)
        summary = read_summary(project)
        digest = inputs_digest(project, url) if summary else ""
        if root is None and project.adopted:
            # Adopted as an existing stack, and the team's to run: status cannot read it
            # here, but it is there to connect to (no plan of ours would tell more).
            return InfraState(
                present=True,
                notes=(
                    f"the adopted stack {project.stack} is kept in {url}; status reads file "
                    "backends only, so its outputs are not read here: connect with --host "
                    "(the stack's worker host)",
                ),
            )
        if root is None:
            fresh = bool(summary and summary.get("inputs") == digest)
            return InfraState(
                plan_fresh=fresh,
                plan=summary_counts(summary) if fresh else None,
                plan_changes=has_changes(summary) if fresh else True,
                notes=(
                    f"pulumi state is kept in {url}; status reads file backends only, so it "
                    "cannot tell from here whether the stack is deployed",
                ),
                stale_hint="run `dreamlake provider plan` to compare the stack with its config",
            )
        files = BackendFiles.open(root, project.stack_project, project.stack_short)
        notes = list(files.notes)
        notes += legacy_note(root, project)
        cp = None
        try:
            cp = files.checkpoint()
        except StateUnreadable as exc:
            notes.append(str(exc))
        locks = files.locks(hostname=self._hostname)
        lock: LockInfo | None = None
        pending = cp.pending_operations if cp else []
        if locks:
            chosen = next((lk for lk in locks if lk.held), locks[0])
            lock = lock_info(chosen, project, env, refresh=not pending)
            if len(locks) > 1:
                notes.append(f"{len(locks)} lock files in {files.lock_dir}")
        if cp is not None and pending:
            info = pending_info(pending, cp.path, cp.manifest_time, project, env)
            if lock is None:
                lock = info
            else:
                lock = lock.model_copy(update={"detail": f"{lock.detail} Also: {info.detail}"})
        extra = leftovers(cp) if cp else []
        notes += extra
        fresh = bool(
            summary
            and lock is None
            and summary.get("inputs") == digest
            and summary.get("state") == files.state_digest()
        )
        outputs = stack_outputs(cp) if cp else {}
        if cp is not None and "power_state" not in outputs:
            # The machines' run state as the stack last applied it (what a suspend
            # declared), read from its resources as the terraform path reads its own.
            power = power_state(cp)
            if power:
                outputs["power_state"] = power
        return InfraState(
            present=bool(cp and cp.resources),
            resources=counted_resources(cp) if cp else 0,
            outputs=outputs,
            lock=lock,
            partial=bool(pending or extra),
            plan_fresh=fresh,
            plan=summary_counts(summary) if fresh else None,
            plan_changes=has_changes(summary) if fresh else True,
            notes=tuple(notes),
        )

    def outputs(self, provider_dir: Path) -> dict[str, Any]:
        return dict(self.observe_state(provider_dir).outputs)

    # -- acting ----------------------------------------------------------------------

    def _request(self, provider_dir: Path) -> tuple[PulumiProject, StackRequest]:
        project = PulumiProject.of(provider_dir)
        if not project.adopted and not project.main.is_file():
            raise BackendError(
                f"{project.main} is missing: the pulumi backend runs the program there",
                argv=["pulumi"],
                kind="pulumi",
            )
        env = self._env()
        cli = require_cli(env)
        run_env = command_env(project, env)
        if self._save_plans(provider_dir):  # update plans are behind the experimental flag
            run_env["PULUMI_EXPERIMENTAL"] = "true"
        project.dir.mkdir(parents=True, exist_ok=True)
        request = StackRequest(
            stack=project.stack,
            project=project.stack_project,
            work_dir=project.dir.absolute(),
            main=None if project.adopted else project.main.absolute(),
            env=run_env,
            cli=cli,
            config_file=None if project.adopted else project.stack_file.absolute(),
        )
        return project, request

    def _scan(self, provider_dir: Path) -> list[Blocking]:
        from ...scan.pulumi import scan_pulumi
        from ...world.vendors import find_template

        record = read_record(provider_dir / "provider.json")
        if record is None:
            raise DreamlakeError(f"{provider_dir} holds no provider.json", kind="unknown_provider")
        template = find_template(record.vendor)
        if template is None:
            return []
        return scan_pulumi(ProviderPaths(provider_dir), template)

    def _save_plans(self, provider_dir: Path) -> bool:
        if self._env().get("PULUMI_EXPERIMENTAL", "").lower() in _TRUE:
            return True
        try:
            record = read_record(provider_dir / "provider.json")
        except DreamlakeError:
            return False
        pul = record.settings.get("pulumi") if record else None
        return bool(isinstance(pul, dict) and pul.get("savePlan"))

    def plan(self, provider_dir: Path, *, progress: Progress | None = None) -> PlanOutcome:
        adopted = PulumiProject.of(provider_dir)
        if adopted.adopted:
            raise not_ours(provider_dir.name, adopted.stack, "preview")
        blocking = self._scan(provider_dir)
        if blocking:
            return PlanOutcome("needs_input", blocking=tuple(blocking))
        project, request = self._request(provider_dir)
        for stale in (project.summary, project.update_plan):
            stale.unlink(missing_ok=True)
        save = str(project.update_plan.absolute()) if self._save_plans(provider_dir) else None
        recovered: list[str] = []
        try:
            session = self.automation.open(request)
            recovered = self._recover(project, request, session, progress)
            events.step("preview", "pulumi preview")
            result = session.preview(save_plan=save, on_output=progress)
        except DreamlakeError:
            raise
        except Exception as exc:
            failure = classify(exc, op="preview")
            if failure.kind == "config":
                return PlanOutcome(
                    "needs_input", blocking=self._blocking(project, failure.problems)
                )
            if failure.kind == "lock":  # preview takes no lock; a stack operation did
                raise BackendError(
                    "pulumi preview: another operation holds the stack; wait for it to end",
                    argv=["pulumi", "preview"],
                    kind="pulumi",
                ) from exc
            raise failure.error or exc from exc
        counts = counts_from(result.changes)
        url = request.env["PULUMI_BACKEND_URL"]
        root = local_root(url, project)
        state = (
            BackendFiles.open(root, project.stack_project, project.stack_short).state_digest()
            if root
            else "remote"
        )
        saved = save is not None and project.update_plan.is_file()
        summary = {
            "stack": project.stack,
            "backendUrl": url,
            "counts": counts.model_dump(),
            "changes": result.changes,
            "inputs": inputs_digest(project, url),
            "state": state,
            "savedPlan": project.update_plan.name if saved else None,
            "createdAt": now_utc(),
        }
        atomic_write(project.summary, json.dumps(summary, indent=2) + "\n")
        files = [*recovered, str(project.summary.absolute())]
        if saved:
            files.append(str(project.update_plan.absolute()))
        return PlanOutcome("ok", plan=counts, files=tuple(files))

    def apply(self, provider_dir: Path, *, progress: Progress | None = None) -> ApplyOutcome:
        adopted = PulumiProject.of(provider_dir)
        if adopted.adopted:  # before anything else: no lock or plan answer sends it to plan
            raise not_ours(provider_dir.name, adopted.stack, "up")
        state = self.observe_state(provider_dir)
        if state.lock is not None:
            return ApplyOutcome("applying", lock=state.lock, reason=state.lock.detail or "")
        if not state.plan_fresh:
            return ApplyOutcome(
                "no_plan",
                reason="no clean preview of the current config and state: run plan first "
                "(the config, the program or the state changed since the last one)",
            )
        project, request = self._request(provider_dir)
        summary = read_summary(project) or {}
        plan = (
            str(project.update_plan.absolute())
            if summary.get("savedPlan") and project.update_plan.is_file()
            else None
        )
        try:
            session = self.automation.open(request)
            events.step("up", "pulumi up")
            session.up(plan=plan, on_output=progress)
        except Exception as exc:
            failure = classify(exc, op="up")
            after = self.observe_state(provider_dir)
            if failure.kind == "lock":
                lock = after.lock or failure.lock
                assert lock is not None
                return ApplyOutcome("applying", lock=lock, reason=lock.detail or "")
            if after.lock is not None:  # the failed update left pending operations
                return ApplyOutcome("applying", lock=after.lock, reason=after.lock.detail or "")
            if failure.kind == "config":
                keys = ", ".join(sorted(failure.problems))
                return ApplyOutcome(
                    "no_plan", reason=f"the program rejected the stack config ({keys}): run plan"
                )
            raise failure.error or exc from exc
        finally:
            for used in (project.summary, project.update_plan):
                used.unlink(missing_ok=True)
        return ApplyOutcome("applied")

    def _recover(
        self,
        project: PulumiProject,
        request: StackRequest,
        session: StackSession,
        progress: Progress | None,
    ) -> list[str]:
        """``plan`` is the recovery step (``apply`` never is): clear what an
        interrupted run left on a file backend, through the Automation API.

        * a stale lock (its process is gone from this host): the state is exported
          to a backup first (``export_stack``), then ``cancel`` removes the lock;
        * pending deletes / updates: ``refresh`` reconciles the state with the cloud
          and clears them;
        * pending creates are never cleared here: the resources may exist in the
          cloud account. The error's next action is the exact ``refresh
          --clear-pending-creates`` command, flagged for a person's approval.

        A held lock is left alone: its run is in flight. Returns the files written."""
        root = local_root(request.env["PULUMI_BACKEND_URL"], project)
        if root is None or project.adopted:
            return []
        files = BackendFiles.open(root, project.stack_project, project.stack_short)
        locks = files.locks(hostname=self._hostname)
        if any(lk.held for lk in locks):
            return []
        try:
            cp = files.checkpoint()
        except StateUnreadable:
            cp = None
        pending = cp.pending_operations if cp else []
        if not locks and not pending:
            return []
        say = progress or (lambda _line: None)
        written = [str(self._backup(project, session))]
        if locks:
            say(f"removing the stale stack lock ({locks[0].detail}): pulumi cancel")
            session.cancel()
            for lk in locks:  # cancel clears the backend's locks; a file one left is ours to drop
                lk.path.unlink(missing_ok=True)
        kinds = {str(o.get("type")) for o in pending}
        if "creating" in kinds:
            env = self._env()
            raise BackendError(
                "an interrupted update left pending creates: those resources may exist in the "
                "cloud account without being in the state. Check the account, then clear them "
                f"(or import the ones that exist); the state was saved to {written[0]}",
                argv=["pulumi", "refresh"],
                kind="pending_creates",
                next_action=Shell(
                    command=cli_command(project, "refresh --yes --clear-pending-creates", env),
                    approval=True,
                ),
            )
        if pending:
            say(f"reconciling {len(pending)} interrupted operation(s): pulumi refresh")
            session.refresh(on_output=progress)
        return written

    def _backup(self, project: PulumiProject, session: StackSession) -> Path:
        """The stack's state, exported before a recovery changes it (restore it with
        ``pulumi stack import --file <it>``, or the Automation API's ``import_stack``)."""
        state = session.export_stack()
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        path = project.dir / BACKUPS / f"{project.stack_short}-{stamp}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(state, indent=2) + "\n", mode=0o600)
        return path.absolute()

    def destroy(
        self, provider_dir: Path, *, yes: bool, progress: Progress | None = None
    ) -> DestroyOutcome:
        """``yes=False``: ``preview_destroy`` (what would be removed, nothing changed);
        ``yes=True``: ``destroy``. A held lock or an interrupted update → ``applying``
        (plan is what recovers it). An adopted stack is never destroyed from here."""
        project = PulumiProject.of(provider_dir)
        if project.adopted:
            raise not_ours(provider_dir.name, project.stack, "destroy")
        state = self.observe_state(provider_dir)
        if state.lock is not None:
            return DestroyOutcome("applying", lock=state.lock)
        project, request = self._request(provider_dir)
        op = "destroy" if yes else "preview"
        try:
            session = self.automation.open(request)
            if not yes:
                preview = session.preview_destroy(on_output=progress)
                return DestroyOutcome("preview", plan=counts_from(preview.changes))
            changes = session.destroy(on_output=progress)
        except Exception as exc:
            failure = classify(exc, op=op)
            after = self.observe_state(provider_dir)
            if failure.kind == "lock" or after.lock is not None:
                lock = after.lock or failure.lock
                assert lock is not None
                return DestroyOutcome("applying", lock=lock)
            raise failure.error or exc from exc
        for used in (project.summary, project.update_plan):
            used.unlink(missing_ok=True)
        return DestroyOutcome("destroyed", plan=counts_from(changes))

    def _blocking(self, project: PulumiProject, problems: dict[str, str]) -> tuple[Blocking, ...]:
        from ...scan.pulumi import commented_lines, read_stack_config

        file = project.stack_file.absolute()
        try:
            from ...settings.readers import read_text

            text = read_text(file)
            _, lines, _issues = read_stack_config(text, project.name)
            commented = commented_lines(text, project.name)
        except (OSError, ValueError):
            lines, commented = {}, {}
        out = []
        for key, msg in problems.items():
            unset = msg == "not set"
            out.append(
                Blocking(
                    key=key,
                    reason="unset" if unset else "invalid",
                    file=str(file),
                    line=lines.get(key) or (commented.get(key) if unset else None),
                    message=None if unset else msg,
                )
            )
        return tuple(out)


BACKEND = PulumiBackend()
