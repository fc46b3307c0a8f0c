"""The saved plan (``terraform/tfplan``) and its record (``terraform/tfplan.meta.json``).

The record is written beside the plan when ``plan`` makes it: the plan file's
hash, a hash of every input (``*.tf``, ``*.tf.json``, ``*.tfvars``,
``*.tfvars.json``, ``.terraform.lock.hcl``), the state's fingerprint, serial and
lineage, and the counts. A plan is *fresh* when the plan file is the one recorded,
no input changed since, and the state is the one it was made against; ``status``
decides ``ready`` from that without running terraform.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ...contract.result import PlanCounts
from ...settings.fsutil import atomic_write
from ...settings.records import record
from ...world.record import now_utc
from .location import state_location
from .planinputs import input_files
from .planname import META_FILE, PLAN_FILE
from .statefile import read_state, state_fingerprint

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

META_FORMAT = 1


def _sha256(path: Path) -> str:
    import stat

    from ...settings.digest import sha256  # no OpenSSL to load

    h = sha256()
    # Without blocking, and only a regular file: a FIFO or a device in place of a
    # configuration file never matches a recorded plan (and never hangs the read).
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not-a-regular-file"
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def input_hashes(tf_dir: Path) -> dict[str, str]:
    return {p.relative_to(tf_dir).as_posix(): _sha256(p) for p in input_files(tf_dir)}


@record(eq=False)  # never compared (statefile.StateFile)
class PlanRecord:
    """The record written beside a saved plan (``tfplan.meta.json``)."""

    plan_sha256: str
    inputs: dict[str, str]
    state: dict[str, Any]
    plan: PlanCounts
    changes: bool
    created_at: str
    terraform_version: str | None = None
    # The resource instances the plan creates: after a failed apply, the ones the
    # state holds are what it left, the others what it did not create.
    creates: tuple[str, ...] = ()

    def to_json(self) -> str:
        data = {
            "format": META_FORMAT,
            "planFile": PLAN_FILE,
            "planSha256": self.plan_sha256,
            "createdAt": self.created_at,
            "terraformVersion": self.terraform_version,
            "changes": self.changes,
            "plan": self.plan.model_dump(),
            "state": self.state,
            "inputs": self.inputs,
            "creates": list(self.creates),
        }
        return json.dumps(data, indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> PlanRecord:
        from ...settings.readers import loads_json

        data = loads_json(text)
        if not isinstance(data, dict) or data.get("format") != META_FORMAT:
            raise ValueError(f"unknown plan record format {data.get('format')!r}")
        return cls(
            plan_sha256=str(data["planSha256"]),
            inputs=dict(data["inputs"]),
            state=dict(data["state"]),
            plan=PlanCounts.model_validate(data["plan"]),
            changes=bool(data.get("changes", True)),
            created_at=str(data.get("createdAt", "")),
            terraform_version=data.get("terraformVersion"),
            creates=tuple(str(a) for a in data.get("creates") or ()),
        )


def _fingerprint(tf_dir: Path) -> str:
    """The local state's fingerprint; remote state is left to terraform, which
    refuses a saved plan whose state changed ("Saved plan is stale")."""
    where = state_location(tf_dir)
    return "remote" if where.remote else state_fingerprint(where.path)


def state_record(tf_dir: Path) -> dict[str, Any]:
    where = state_location(tf_dir)
    st = read_state(where.path)
    return {
        "fingerprint": _fingerprint(tf_dir),
        "serial": st.serial,
        "lineage": st.lineage,
    }


def plan_inputs(tf_dir: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """What a plan made now reads: the inputs' hashes and the state's record."""
    return input_hashes(tf_dir), state_record(tf_dir)


def make_record(
    tf_dir: Path,
    plan: PlanCounts,
    *,
    changes: bool,
    terraform_version: str | None,
    creates: tuple[str, ...] = (),
    seen: tuple[dict[str, str], dict[str, Any]] | None = None,
) -> PlanRecord:
    """The record of the plan just saved in ``tf_dir``; ``seen``: :func:`plan_inputs`
    as the plan started (else read now)."""
    inputs, state = plan_inputs(tf_dir) if seen is None else seen
    return PlanRecord(
        plan_sha256=_sha256(tf_dir / PLAN_FILE),
        inputs=inputs,
        state=state,
        plan=plan,
        changes=changes,
        created_at=now_utc(),
        terraform_version=terraform_version,
        creates=creates,
    )


def write_record(tf_dir: Path, record: PlanRecord) -> Path:
    """The record beside the saved plan, written atomically without an ``fsync``:
    terraform writes the plan file itself without one, and a record a crash empties
    reads as no record, so the plan is not fresh and ``plan`` runs again."""
    path = tf_dir / META_FILE
    atomic_write(path, record.to_json(), durable=False)
    return path


def read_record(tf_dir: Path) -> PlanRecord | None:
    try:
        from ...settings.readers import read_text

        return PlanRecord.from_json(read_text(tf_dir / META_FILE))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


@record(eq=False)  # never compared (statefile.StateFile)
class Freshness:
    """Whether the saved plan is still the one to apply, and why not."""

    fresh: bool
    reason: str  # why not fresh ("" when fresh)
    record: PlanRecord | None = None


def freshness(tf_dir: Path) -> Freshness:
    """Is the saved plan the one ``plan`` made, for today's inputs and state?"""
    plan_path = tf_dir / PLAN_FILE
    if not plan_path.is_file():
        return Freshness(False, "there is no saved plan")
    record = read_record(tf_dir)
    if record is None:
        return Freshness(False, f"the saved plan has no readable {META_FILE} beside it")
    try:
        if _sha256(plan_path) != record.plan_sha256:
            return Freshness(
                False, "the saved plan file was replaced since plan recorded it", record
            )
    except OSError:
        return Freshness(False, "the saved plan cannot be read", record)
    now = input_hashes(tf_dir)
    changed = sorted(k for k in set(now) | set(record.inputs) if now.get(k) != record.inputs.get(k))
    if changed:
        shown = ", ".join(changed[:3]) + (" …" if len(changed) > 3 else "")
        return Freshness(False, f"the configuration changed since the plan ({shown})", record)
    if _fingerprint(tf_dir) != record.state.get("fingerprint"):
        return Freshness(
            False, "the state changed since the plan (an apply or refresh ran)", record
        )
    return Freshness(True, "", record)


def discard(tf_dir: Path) -> None:
    """Remove the saved plan and its record (after it was applied)."""
    for name in (PLAN_FILE, META_FILE):
        (tf_dir / name).unlink(missing_ok=True)
