"""The terraform backend: ``plan``, ``apply``, ``observe_state`` and ``outputs``
for one provider directory (its ``terraform/`` folder)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from ...backends.base import ApplyOutcome, DestroyOutcome, InfraState, PlanOutcome, Progress
from ...contract import events
from ...contract.errors import BackendError
from ...contract.result import LockInfo
from ...settings.records import record
from ...world.vendors import Template
from . import planfile, tfexec, uijson  # tfexec: each argv builder loads where it runs
from .location import state_location
from .lockinfo import lock_from_diagnostic
from .planinputs import LOCK_HCL
from .planname import PLAN_FILE
from .runner import Completed, TerraformFailed, failed, run, run_env, terraform_binary
from .runs import LOCK_SUMMARY, feed, lock_path, mtime
from .state import observe_state

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

    from . import initmark

STALE_PLAN_SUMMARY = "Saved plan is stale"


class StateLocked(BackendError):
    """Another terraform run holds the state lock."""

    def __init__(self, message: str, lock: LockInfo, completed: Completed | None = None) -> None:
        super().__init__(
            message,
            argv=completed.argv if completed else None,
            returncode=completed.returncode if completed else None,
            stderr_tail=completed.stderr_tail if completed else "",
            kind="terraform",
        )
        self.lock = lock


def _template_for(provider_dir: Path) -> Template | None:
    from ...world.record import read_record
    from ...world.vendors import find_template

    try:
        record = read_record(provider_dir / "provider.json")
    except Exception:
        return None
    return find_template(record.vendor) if record else None


class TerraformBackend:
    name = "terraform"

    def observe_state(self, provider_dir: Path) -> InfraState:
        return observe_state(provider_dir)

    # -- plan ---------------------------------------------------------------

    def plan(
        self,
        provider_dir: Path,
        *,
        progress: Progress | None = None,
        template: Template | None = None,
    ) -> PlanOutcome:
        """``plan -out=tfplan`` (after ``init`` when what init reads changed); record
        the plan beside it. Where the plan reports errors, the former sequence is
        run to say which step fails: ``init`` (when it was skipped), then
        ``validate``, then the plan again, so every error reads as it always did."""
        tf = provider_dir / "terraform"
        if not tf.is_dir():
            raise BackendError(f"{tf} does not exist: nothing to plan", kind="terraform")
        had_lock_hcl = (tf / LOCK_HCL).exists()
        from . import initmark
        from .required import require_version

        binary = terraform_binary()
        env = run_env(provider_dir)
        mark = initmark.check(tf, binary, env)
        version = require_version(tf, binary=binary, known=mark.version)
        from .planjson import stream_plan  # a plan's only: apply has no use for it

        # What the plan reads (the inputs' hashes, the state's record) for its record,
        # taken before terraform's plan is waited for (after any init, which may
        # write the lock file): for a plan started ahead, while it runs.
        seen = None if mark.needed else planfile.plan_inputs(tf)
        ahead = _taken(tf, binary, env, mark, progress)
        fingerprint = mark.fingerprint
        if mark.needed:
            fingerprint = run_init(tf, provider_dir, binary, env, version).fingerprint
            seen = planfile.plan_inputs(tf)
        done = ahead if ahead is not None else _plan_run(tf, provider_dir, binary, env, progress)
        if done.returncode not in (0, 2) or uijson.error_diagnostics(done.messages):
            if not mark.needed:
                fingerprint = run_init(tf, provider_dir, binary, env, version).fingerprint
            _validate(tf, provider_dir, binary, env)
            if not mark.needed:
                seen = planfile.plan_inputs(tf)
                done = _plan_run(tf, provider_dir, binary, env, progress)
        summary = uijson.summarize(done.messages)
        if done.returncode not in (0, 2) or summary.errors:
            locked = [d for d in summary.errors if d.get("summary") == LOCK_SUMMARY]
            if locked:
                lock = lock_from_diagnostic(str(locked[0].get("detail", "")), lock_path(tf))
                raise StateLocked("another terraform run holds the state lock", lock, done.run)
            from .diagnostics import blocking_from_diagnostics  # a plan with errors only

            blocking = blocking_from_diagnostics(
                summary.errors,
                provider_dir=provider_dir,
                template=template if template is not None else _template_for(provider_dir),
                tf_dir=tf,
            )
            if blocking:
                return PlanOutcome(result="needs_input", blocking=tuple(blocking))
            raise failed(done.run, "plan", summary.errors)

        planned = stream_plan(done.messages)
        counts = planned.counts
        changes = done.returncode == 2 or bool(
            counts.add or counts.change or counts.destroy or planned.output_changes
        )
        record = planfile.make_record(
            tf,
            counts,
            changes=changes,
            terraform_version=summary.version,
            creates=planned.creates,
            seen=seen,
        )
        meta = planfile.write_record(tf, record)
        if ahead is None or fingerprint != mark.fingerprint:
            # A plan taken over from the record was started with these same facts
            # (early.take): that record stands, and nothing is read to rewrite it.
            from . import early

            with contextlib.suppress(OSError):  # no record: the next plan starts when ready
                early.remember(tf, binary, env, fingerprint)
        files = [str(tf / PLAN_FILE), str(meta)]
        if not had_lock_hcl and (tf / LOCK_HCL).exists():
            files.append(str(tf / LOCK_HCL))
        return PlanOutcome(result="ok", plan=counts, files=tuple(files))

    # -- apply --------------------------------------------------------------

    def apply(self, provider_dir: Path, *, progress: Progress | None = None) -> ApplyOutcome:
        """Apply exactly the saved plan, if it is still fresh (or take over the apply the
        console script started ahead once it had checked that: ``early_apply``)."""
        tf = provider_dir / "terraform"
        ahead = sys.modules.get(f"{__package__}.early_apply")  # loaded where one started
        if ahead is not None and ahead.pending(tf) is not None:
            taken = ahead.take(tf)
            if taken is not None:
                started, done = taken
                events.step("apply", "terraform apply", total=started.total)
                return _applied(tf, provider_dir, started.state, started.before, done)
        state = observe_state(provider_dir)
        if state.lock is not None and state.lock.state == "held":
            return ApplyOutcome(
                result="applying", lock=state.lock, reason="another terraform run is in flight"
            )
        counts = state.plan  # the saved plan's, when observe_state found it fresh just now
        if not state.plan_fresh:  # asked again, for the reason in words
            fresh = planfile.freshness(tf)
            if not fresh.fresh:
                return ApplyOutcome(result="no_plan", reason=f"not applied: {fresh.reason}")
            counts = fresh.record.plan if fresh.record else None

        # The binary may have changed since the plan; the init record knows the
        # version of the same file. (Imported here: an apply taken over needs neither.)
        from . import initmark
        from .required import require_version

        binary = terraform_binary()
        require_version(tf, binary=binary, known=initmark.known_version(tf, binary))
        state_path = state_location(tf).path
        watched = (state_path, state_path.with_name(state_path.name + ".backup"))
        before = {p: mtime(p) for p in watched}
        total = counts.add + counts.change + counts.destroy if counts is not None else None
        events.step("apply", "terraform apply", total=total)  # a done/total count
        done = run(
            tfexec.apply_args(),
            cwd=tf,
            provider_dir=provider_dir,
            on_line=feed(progress),
            binary=binary,
        )
        return _applied(tf, provider_dir, state_path, before, done)

    # -- destroy ------------------------------------------------------------

    def destroy(
        self, provider_dir: Path, *, yes: bool, progress: Progress | None = None
    ) -> DestroyOutcome:
        """A real destroy plan; applied only with ``yes`` (see ``destroy.py``)."""
        from .destroy import destroy

        return destroy(provider_dir, yes=yes, progress=progress)

    # -- outputs ------------------------------------------------------------

    def outputs(self, provider_dir: Path) -> dict[str, Any]:
        return dict(observe_state(provider_dir).outputs)


def _applied(
    tf: Path,
    provider_dir: Path,
    state_path: Path,
    before: dict[Path, float | None],
    done: Completed,
) -> ApplyOutcome:
    """The outcome of a finished ``terraform apply`` of the saved plan (``before``:
    the state files' times when it started)."""
    messages = uijson.parse_stream(done.stdout)
    summary = uijson.summarize(messages)
    written = [str(p) for p, m in before.items() if p.exists() and mtime(p) != m]
    if done.returncode < 0:
        after = observe_state(provider_dir)
        lock = after.lock or LockInfo(
            state="stale",
            path=str(state_path),
            detail=f"terraform apply was stopped by signal {-done.returncode}",
        )
        return ApplyOutcome(
            result="applying",
            lock=lock,
            reason="the apply was interrupted",
            files=tuple(written),
        )
    if done.returncode != 0 or summary.errors:
        for d in summary.errors:
            if d.get("summary") == LOCK_SUMMARY:
                lock = lock_from_diagnostic(str(d.get("detail", "")), lock_path(tf))
                return ApplyOutcome(
                    result="applying",
                    lock=lock,
                    reason="another terraform run holds the state lock",
                )
            if d.get("summary") == STALE_PLAN_SUMMARY:
                planfile.discard(tf)
                return ApplyOutcome(
                    result="no_plan",
                    reason="not applied: terraform says the saved plan is stale (the state changed)",
                )
        raise failed(done, "apply", summary.errors)
    planfile.discard(tf)
    return ApplyOutcome(result="applied", files=tuple(written))


@record(eq=False)  # never compared (statefile.StateFile)
class _PlanRun:
    """One ``plan -json`` run and the messages of its stream."""

    run: Completed
    messages: list[dict[str, Any]]

    @property
    def returncode(self) -> int:
        return self.run.returncode


def run_init(
    tf: Path, provider_dir: Path, binary: str, env: dict[str, str], version: str | None
) -> initmark.InitCheck:
    """``terraform init``, and the record of what it read (only when it succeeded)."""
    from . import initmark

    events.step("init", "terraform init")
    initmark.forget(tf)
    done = run(tfexec.init_args(), cwd=tf, provider_dir=provider_dir, binary=binary, env=env)
    if done.returncode != 0:
        raise failed(done, "init")
    return initmark.record(tf, binary, env, version)


def _validate(tf: Path, provider_dir: Path, binary: str, env: dict[str, str]) -> None:
    """``terraform validate``, run only after a plan reported errors: a configuration
    it finds invalid fails as ``validate`` always did."""
    events.step("validate", "terraform validate")
    done = run(tfexec.validate_args(), cwd=tf, provider_dir=provider_dir, binary=binary, env=env)
    if done.returncode != 0:
        raise failed(done, "validate", _validate_diagnostics(done.stdout))


def _plan_run(
    tf: Path, provider_dir: Path, binary: str, env: dict[str, str], progress: Progress | None
) -> _PlanRun:
    events.step("plan", "terraform plan")
    done = run(
        tfexec.plan_args(),
        cwd=tf,
        provider_dir=provider_dir,
        on_line=feed(progress),
        binary=binary,
        env=env,
    )
    return _PlanRun(done, uijson.parse_stream(done.stdout))


def _taken(
    tf: Path,
    binary: str,
    env: dict[str, str],
    mark: initmark.InitCheck,
    progress: Progress | None,
) -> _PlanRun | None:
    """The plan the console script started ahead with these same facts (``early``),
    finished; None when there is none (one started with other facts is stopped
    first, before any other terraform run here)."""
    early = sys.modules.get(f"{__package__}.early")
    if early is None or not early.pending(tf):
        return None
    done = early.take(tf, binary, env, mark, progress)
    if done is None:
        return None
    events.step("plan", "terraform plan")  # as _plan_run says it (no sink: taken only then)
    return _PlanRun(done, uijson.parse_stream(done.stdout))


def _validate_diagnostics(stdout: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(stdout)
    except ValueError:
        return []
    diags = data.get("diagnostics") if isinstance(data, dict) else None
    return [d for d in diags or [] if isinstance(d, dict) and d.get("severity") == "error"]


__all__ = ["StateLocked", "TerraformBackend", "TerraformFailed", "run_init"]
