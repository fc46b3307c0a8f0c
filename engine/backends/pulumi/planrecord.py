"""The plan record of a Pulumi stack (``pulumi/summary.plan.json``): Pulumi's change
summary as plan counts, and the digest of what a preview depends on (the project's
files, the backend URL and the packaged vendor program), which keeps the record
fresh while neither changed."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ...contract.errors import DreamlakeError
from ...contract.result import PlanCounts
from ...world.record import read_record
from .project import PulumiProject


def counts_from(changes: Mapping[str, int]) -> PlanCounts:
    """Plan counts from Pulumi's change summary: a replace adds one and destroys one
    (as terraform counts it); ``create-replacement`` / ``delete-replaced`` are the
    steps of a ``replace`` and not counted again; ``same``, ``read``, ``refresh``
    are not changes."""
    c = {k: int(v) for k, v in changes.items()}
    return PlanCounts(
        add=c.get("create", 0) + c.get("replace", 0) + c.get("import", 0),
        change=c.get("update", 0),
        destroy=c.get("delete", 0) + c.get("replace", 0) + c.get("discard", 0),
    )


def inputs_digest(project: PulumiProject, url: str) -> str:
    """The files a preview depends on, the backend URL, and the packaged vendor
    program the scaffolded ``__main__.py`` wraps (an upgrade changes the plan)."""
    h = hashlib.sha256(url.encode())
    h.update(_packaged_program(project))
    for p in project.inputs():
        h.update(p.relative_to(project.dir).as_posix().encode() + b"\0")
        try:
            h.update(p.read_bytes())
        except OSError:
            h.update(b"?")
        h.update(b"\0")
    return h.hexdigest()


def _packaged_program(project: PulumiProject) -> bytes:
    try:
        record = read_record(project.provider_dir / "provider.json")
    except DreamlakeError:
        return b""
    if record is None or project.adopted:
        return b""
    from importlib import resources

    try:
        stacks = resources.files("dreamlake.stacks")
        node = stacks.joinpath(record.vendor, "program.py")
        if not node.is_file():
            return b""
        # the vendor's own modules the program imports (kube's config model, say)
        own = sorted(
            (p for p in stacks.joinpath(record.vendor).iterdir() if p.name.endswith(".py")),
            key=lambda p: p.name,
        )
        beside = b"".join(
            p.read_bytes() for p in own if p.name not in ("__init__.py", "program.py")
        )
        # and the helpers every vendor's program imports
        shared = stacks.joinpath("support.py")
        return node.read_bytes() + beside + (shared.read_bytes() if shared.is_file() else b"")
    except (ImportError, OSError):
        return b""


def read_summary(project: PulumiProject) -> dict[str, Any] | None:
    try:
        from ...settings.readers import read_json

        data = read_json(project.summary)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def summary_counts(summary: dict[str, Any] | None) -> PlanCounts | None:
    try:
        return PlanCounts.model_validate((summary or {}).get("counts"))
    except ValueError:
        return None


def has_changes(summary: dict[str, Any] | None) -> bool:
    """Whether a saved preview would change anything (unknown counts: assume so)."""
    counts = summary_counts(summary)
    return counts is None or (counts.add + counts.change + counts.destroy) > 0


__all__ = ["counts_from", "has_changes", "inputs_digest", "read_summary", "summary_counts"]
