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
from ...contract import LockInfo
from ...errors import BackendError
from . import planfile, uijson
from .location import state_location
from .planjson import plan_counts
from .runner import failed, run
from .state import observe_state
from .tfexec import DESTROY_PLAN_FILE, destroy_apply_args, destroy_plan_args, init_args, show_args


def destroy(provider_dir: Path, *, yes: bool, progress: Progress | None = None) -> DestroyOutcome:
    from .backend import LOCK_SUMMARY, _feed, _lock_path, _mtime
    from .lockinfo import lock_from_diagnostic

    tf = provider_dir / "terraform"
    if not tf.is_dir():
        raise BackendError(f"{tf} does not exist: nothing to destroy", kind="terraform")
    state = observe_state(provider_dir)
    if state.lock is not None and state.lock.state == "held":
        return DestroyOutcome("applying", lock=state.lock)

    done = run(init_args(), cwd=tf, provider_dir=provider_dir)
    if done.returncode != 0:
        raise failed(done, "init")

    plan_path = tf / DESTROY_PLAN_FILE
    try:
        done = run(destroy_plan_args(), cwd=tf, provider_dir=provider_dir, on_line=_feed(progress))
        summary = uijson.summarize(uijson.parse_stream(done.stdout))
        if done.returncode not in (0, 2) or summary.errors:
            for d in summary.errors:
                if d.get("summary") == LOCK_SUMMARY:
                    lock = lock_from_diagnostic(str(d.get("detail", "")), _lock_path(tf))
                    return DestroyOutcome("applying", lock=lock)
            raise failed(done, "plan -destroy", summary.errors)
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
        before = {p: _mtime(p) for p in watched}
        done = run(destroy_apply_args(), cwd=tf, provider_dir=provider_dir, on_line=_feed(progress))
        summary = uijson.summarize(uijson.parse_stream(done.stdout))
        written = tuple(str(p) for p, m in before.items() if p.exists() and _mtime(p) != m)
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
                    lock = lock_from_diagnostic(str(d.get("detail", "")), _lock_path(tf))
                    return DestroyOutcome("applying", lock=lock, files=written)
            raise failed(done, "destroy", summary.errors)
        # The saved apply plan was made against the state just destroyed.
        planfile.discard(tf)
        return DestroyOutcome("destroyed", plan=counts, files=written)
    finally:
        plan_path.unlink(missing_ok=True)


__all__ = ["destroy"]
