"""``destroy`` for the terraform backend: a real destroy plan, saved, then applied.

Without ``yes`` the destroy plan is made (so the counts are terraform's own, from
the current state and configuration) and removed again: nothing is destroyed and
nothing is left behind. With ``yes`` exactly that saved destroy plan is applied.
The scaffold, the decisions and the (now empty) state stay, so ``plan`` + ``apply``
bring the infrastructure back. A lock another run holds → ``applying``; any other
failure raises ``TerraformFailed``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...backends.base import DestroyOutcome, Progress
from ...contract.errors import BackendError
from ...contract.result import LockInfo, PlanCounts
from . import planfile, uijson
from .location import state_location
from .lockinfo import lock_from_diagnostic
from .planjson import plan_counts
from .required import require_version
from .runner import failed, run
from .runs import LOCK_SUMMARY, feed, lock_path, mtime
from .state import observe_state
from .tfexec import DESTROY_PLAN_FILE, destroy_apply_args, destroy_plan_args, init_args, show_args


def destroy(provider_dir: Path, *, yes: bool, progress: Progress | None = None) -> DestroyOutcome:
    tf = provider_dir / "terraform"
    if not tf.is_dir():
        raise BackendError(f"{tf} does not exist: nothing to destroy", kind="terraform")
    state = observe_state(provider_dir)
    if state.lock is not None and state.lock.state == "held":
        return DestroyOutcome("applying", lock=state.lock)
    require_version(tf)

    def init() -> None:
        done = run(init_args(), cwd=tf, provider_dir=provider_dir)
        if done.returncode != 0:
            raise failed(done, "init")

    # A state means an init ran here before; it is run again only when terraform
    # says so (each run of a big provider plugin costs seconds).
    initialised = (tf / ".terraform").is_dir()
    if not initialised:
        init()

    plan_path = tf / DESTROY_PLAN_FILE
    try:
        done = run(destroy_plan_args(), cwd=tf, provider_dir=provider_dir, on_line=feed(progress))
        summary = uijson.summarize(uijson.parse_stream(done.stdout))
        if initialised and _needs_init(done.returncode, summary.errors):
            init()
            done = run(
                destroy_plan_args(), cwd=tf, provider_dir=provider_dir, on_line=feed(progress)
            )
            summary = uijson.summarize(uijson.parse_stream(done.stdout))
        if done.returncode not in (0, 2) or summary.errors:
            for d in summary.errors:
                if d.get("summary") == LOCK_SUMMARY:
                    lock = lock_from_diagnostic(str(d.get("detail", "")), lock_path(tf))
                    return DestroyOutcome("applying", lock=lock)
            raise failed(done, "plan -destroy", summary.errors)
        counts = _counts(summary.changes)
        if counts is None:  # no change_summary in the stream: ask the saved plan
            shown = run(show_args(DESTROY_PLAN_FILE), cwd=tf, provider_dir=provider_dir)
            if shown.returncode != 0:
                raise failed(shown, "show")
            try:
                counts = plan_counts(json.loads(shown.stdout))
            except ValueError as exc:
                raise failed(shown, "show (no JSON)") from exc
        if not yes:
            return DestroyOutcome("preview", plan=counts)

        state_path = state_location(tf).path
        watched = (state_path, state_path.with_name(state_path.name + ".backup"))
        before = {p: mtime(p) for p in watched}
        done = run(destroy_apply_args(), cwd=tf, provider_dir=provider_dir, on_line=feed(progress))
        summary = uijson.summarize(uijson.parse_stream(done.stdout))
        written = tuple(str(p) for p, m in before.items() if p.exists() and mtime(p) != m)
        if done.returncode < 0:
            after = observe_state(provider_dir)
            lock = after.lock or LockInfo(
                state="stale",
                path=str(state_path),
                detail=f"terraform destroy was stopped by signal {-done.returncode}",
            )
            return DestroyOutcome("applying", lock=lock, files=written)
        if done.returncode != 0 or summary.errors:
            for d in summary.errors:
                if d.get("summary") == LOCK_SUMMARY:
                    lock = lock_from_diagnostic(str(d.get("detail", "")), lock_path(tf))
                    return DestroyOutcome("applying", lock=lock, files=written)
            raise failed(done, "destroy", summary.errors)
        # The saved apply plan was made against the state just destroyed.
        planfile.discard(tf)
        return DestroyOutcome("destroyed", plan=counts, files=written)
    finally:
        plan_path.unlink(missing_ok=True)


# Diagnostics terraform gives when the working directory needs ``init`` again.
NEEDS_INIT = (
    "Inconsistent dependency lock file",
    "Missing required provider",
    "Module not installed",
    "Backend initialization required",
    "Required plugins are not installed",
)


def _needs_init(returncode: int, errors: list[dict[str, object]]) -> bool:
    if returncode in (0, 2) and not errors:
        return False
    return any(
        any(w in f"{d.get('summary', '')} {d.get('detail', '')}" for w in NEEDS_INIT)
        or "terraform init" in str(d.get("detail", ""))
        for d in errors
    )


def _counts(changes: dict[str, int] | None) -> PlanCounts | None:
    if changes is None:
        return None
    return PlanCounts(
        add=changes.get("add", 0), change=changes.get("change", 0), destroy=changes.get("remove", 0)
    )


__all__ = ["destroy"]
