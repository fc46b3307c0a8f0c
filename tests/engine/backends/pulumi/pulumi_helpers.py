"""Helpers for the pulumi backend tests: the shared fixture files laid out as a
file backend, and scaffolded provider directories."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from dreamlake.engine.backends.pulumi.scaffold import scaffold_files
from dreamlake.engine.record import ProviderRecord
from dreamlake.engine.vendors import get_template

FIXTURES = Path(os.environ.get("DREAMLAKE_FIXTURES", "/work/shared/fixtures")) / "pulumi"


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
        lines = ["config:"] + [
            f"  dreamlake:{k}: {json.dumps(v)}" for k, v in config.items()
        ]
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
