"""The drift check for the terraform backend: ``plan -refresh-only`` into a saved plan
nobody applies, read, recorded and removed.

``terraform plan -refresh-only -detailed-exitcode -json -out=drift.tfplan`` asks
every provider what its resources hold now, against the state, and writes nothing
but that plan file: the state, the saved plan (``tfplan``) and its record stay as
they were. Exit 0 is "nothing moved"; exit 2 with ``resource_drift`` messages names
what moved, and then ``show -json drift.tfplan`` says which attributes. The record
(:mod:`...driftrecord`, ``tfplan.drift.json``) is written either way, taken against
the state's serial and lineage.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...backends.base import Progress
from ...backends.driftrecord import DriftRecord, write_drift
from ...contract import events
from ...contract.errors import BackendError
from ...contract.result import DriftedResource
from ...world.record import now_utc
from . import initmark, uijson
from .backend import StateLocked, run_init
from .driftjson import Drifted, merge, plan_drift, stream_drift
from .lockinfo import lock_from_diagnostic
from .planname import DRIFT_FILE, DRIFT_PLAN_FILE
from .required import require_version
from .runner import Completed, failed, run, run_env, terraform_binary
from .runs import LOCK_SUMMARY, feed, lock_path
from .state import current_state, drift_key
from .tfexec import plan_args, show_args


def check_drift(provider_dir: Path, *, progress: Progress | None = None) -> DriftRecord:
    """Run the refresh-only plan for ``provider_dir``, record what drifted beside the
    plan record and return the record. A held state lock raises ``StateLocked``; any
    other failure ``TerraformFailed``. Never writes the state."""
    tf = provider_dir / "terraform"
    if not tf.is_dir():
        raise BackendError(f"{tf} does not exist: nothing to check", kind="terraform")
    binary = terraform_binary()
    env = run_env(provider_dir)
    mark = initmark.check(tf, binary, env)
    version = require_version(tf, binary=binary, known=mark.version)
    if mark.needed:
        run_init(tf, provider_dir, binary, env, version)
    # The state the refresh compares with, read before it runs: an apply that lands
    # meanwhile makes the record older than the state at once (dropped, not misread).
    against = drift_key(current_state(provider_dir))
    try:
        done = _refresh_plan(tf, provider_dir, binary, env, progress)
        messages = uijson.parse_stream(done.stdout)
        if _failed(done, messages) and not mark.needed:
            run_init(tf, provider_dir, binary, env, version)  # what init read changed
            done = _refresh_plan(tf, provider_dir, binary, env, progress)
            messages = uijson.parse_stream(done.stdout)
        summary = uijson.summarize(messages)
        if _failed(done, messages):
            locked = [d for d in summary.errors if d.get("summary") == LOCK_SUMMARY]
            if locked:
                lock = lock_from_diagnostic(str(locked[0].get("detail", "")), lock_path(tf))
                raise StateLocked("another terraform run holds the state lock", lock, done)
            raise failed(done, "plan -refresh-only", summary.errors)
        drifted = stream_drift(messages)
        if drifted:
            drifted = merge(drifted, _shown(tf, provider_dir, binary, env))
    finally:
        (tf / DRIFT_PLAN_FILE).unlink(missing_ok=True)
    seen = now_utc()
    record = DriftRecord(
        backend="terraform",
        seen_at=seen,
        state=against,
        resources=tuple(_wire(d, seen) for d in drifted),
        tool_version=summary.version,
    )
    return write_drift(tf / DRIFT_FILE, record)


def _refresh_plan(
    tf: Path, provider_dir: Path, binary: str, env: dict[str, str], progress: Progress | None
) -> Completed:
    events.step("drift", "terraform plan -refresh-only")
    args = plan_args(out=DRIFT_PLAN_FILE, refresh_only=True)
    return run(
        args, cwd=tf, provider_dir=provider_dir, on_line=feed(progress), binary=binary, env=env
    )


def _failed(done: Completed, messages: list[dict[str, object]]) -> bool:
    return done.returncode not in (0, 2) or bool(uijson.error_diagnostics(messages))


def _shown(tf: Path, provider_dir: Path, binary: str, env: dict[str, str]) -> list[Drifted]:
    """The changed attributes, from ``show -json`` of the refresh-only plan."""
    shown = run(
        show_args(DRIFT_PLAN_FILE), cwd=tf, provider_dir=provider_dir, binary=binary, env=env
    )
    if shown.returncode != 0:
        raise failed(shown, "show")
    try:
        data = json.loads(shown.stdout)
    except ValueError as exc:
        raise failed(shown, "show (no JSON)") from exc
    return plan_drift(data) if isinstance(data, dict) else []


def _wire(d: Drifted, seen: str) -> DriftedResource:
    return DriftedResource(
        address=d.address, action=d.action, attributes=list(d.attributes), seen_at=seen
    )


__all__ = ["check_drift"]
