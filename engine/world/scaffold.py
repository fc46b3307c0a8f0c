"""What a scaffold writes: the vendor's files for the chosen backend, provider.json
and ``.dream/.gitignore``; built in a temp dir and renamed into place whole."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from importlib.resources.abc import Traversable
from pathlib import Path

import dreamlake

from ..settings.fsutil import atomic_write
from .paths import ProviderPaths, Root
from .record import ProviderRecord
from .vendors import Template

GITIGNORE = """\
# Written by dreamlake on first scaffold: providers stay reviewable in a PR,
# state, plans, plugin caches and secrets stay out of git.
providers/*/terraform/.terraform/
providers/*/terraform/terraform.tfstate*
providers/*/terraform/.terraform.tfstate.lock.info
providers/*/terraform/errored.tfstate
providers/*/terraform/*.tfplan
providers/*/terraform/tfplan
providers/*/terraform/tfplan.*
providers/*/pulumi/.state/
providers/*/pulumi/.passphrase
providers/*/pulumi/*.plan.json
providers/*/daemon.json
providers/*/intent.json
watch.lock
watch.json
watch.sh
watch.log
"""

_SKIP = {"TEMPLATE.json", "__init__.py", "__pycache__"}


def _walk(node: Traversable, prefix: str = "") -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for entry in sorted(node.iterdir(), key=lambda e: e.name):
        if entry.name in _SKIP or entry.name.endswith(".pyc"):
            continue
        rel = f"{prefix}{entry.name}"
        if entry.is_dir():
            out.update(_walk(entry, rel + "/"))
        else:
            out[rel] = entry.read_bytes()
    return out


def template_files(template: Template, backend: str, name: str) -> dict[str, bytes]:
    """Relative path under the provider dir → content, for ``backend``."""
    if backend == "pulumi":
        from ..backends.pulumi.scaffold import scaffold_files

        return scaffold_files(template, name)
    return _walk(template.root)


def write_gitignore(root: Root) -> Path | None:
    """``.dream/.gitignore`` on first scaffold; never overwrites the user's."""
    path = root.dream / ".gitignore"
    if path.exists():
        return None
    return path if atomic_write(path, GITIGNORE, overwrite=False) else None


def new_provider_id() -> str:
    """A fresh identity for a new provider: unique across roots and machines."""
    import uuid

    return f"prv-{uuid.uuid4().hex}"


def build(root: Root, name: str, template: Template, backend: str) -> list[Path] | None:
    """Scaffold ``name`` whole or not at all. Returns the files written, or None when
    another run scaffolded it first (nothing of ours is left behind)."""
    final = root.provider_dir(name)
    root.providers.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".partial", dir=root.providers))
    try:
        files = template_files(template, backend, name)
        record = ProviderRecord(
            name=name,
            vendor=template.vendor,
            backend=backend,  # type: ignore[arg-type]
            template_version=template.version,
            engine_version=dreamlake.__version__,
            id=new_provider_id(),
        )
        files["provider.json"] = record.to_json().encode()
        for rel, data in files.items():
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        os.chmod(tmp, 0o755)
        try:
            os.rename(tmp, final)
        except OSError:
            if final.exists():
                return None
            raise
        written = [final / rel for rel in sorted(files, key=_order)]
        return written
    finally:
        if tmp.exists():
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp)


def _order(rel: str) -> tuple[int, str]:
    # provider.json first, then the files an agent edits, then the rest.
    if rel == "provider.json":
        return (0, rel)
    if rel.endswith((".tfvars", ".yaml", "adopt.json")):
        return (1, rel)
    return (2, rel)


def paths_for(root: Root, name: str) -> ProviderPaths:
    return ProviderPaths(root.provider_dir(name))
