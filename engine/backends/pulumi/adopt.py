"""Adopting a Pulumi stack a team already manages:
``dreamlake provider create -n X --backend pulumi --stack ORG/PROJECT/STACK``.

dreamlake does not own the stack's program: it writes only ``provider.json``
(vendor ``pulumi-stack``, ``settings.pulumi`` naming the stack, the backend URL it
lives in, and ``adopted: true``) and ``pulumi/ADOPTED.md``. ``status`` derives the
provider's state from that stack's state (read directly on a file backend), and
``connect`` puts a daemon on the host its outputs name (``worker_host``, with
``worker_user`` when set), so the team's infrastructure gets a daemon without
dreamlake planning, applying or destroying it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import dreamlake

from ...contract import commands
from ...contract.errors import DreamlakeError, UsageError
from ...contract.result import Run, Shell
from ...world.paths import Root
from ...world.record import ProviderRecord
from ...world.scaffold import new_provider_id
from .project import split_stack

ADOPTED_VENDOR = "pulumi-stack"
PULUMI_CLOUD = "https://api.pulumi.com"
_PART = re.compile(r"^[A-Za-z0-9_.-]+$")


def parse_stack_ref(ref: str) -> str:
    """``ORG/PROJECT/STACK``, checked: three non-empty parts a stack name can hold."""
    org, project, stack = split_stack(ref)
    if not (org and project and all(_PART.match(p) for p in (org, project, stack))):
        raise UsageError(
            f"--stack {ref!r} must name a stack fully, as ORG/PROJECT/STACK (on a file "
            "backend the organization is `organization`), e.g. acme/gpu-fleet/prod"
        )
    return f"{org}/{project}/{stack}"


def adopted_md(name: str, ref: str, url: str) -> str:
    return (
        f"# `{name}` adopts the Pulumi stack `{ref}`\n\n"
        f"The stack lives in `{url}` and its program is managed where it always was:\n"
        "dreamlake never plans, applies or destroys it.\n\n"
        f"* `dreamlake provider status -n {name}` derives the state from the stack's state\n"
        "  (read directly when the backend is a `file://` one).\n"
        f"* `dreamlake provider connect -n {name}` starts a daemon on the host the stack's\n"
        "  outputs name: `worker_host` (and `worker_user` when set). Export them from your\n"
        '  program, e.g. `pulumi.export("worker_host", instance.public_ip)`, or pass\n'
        "  `--host` to connect.\n"
    )


def adopt(
    root: Root, name: str, ref: str, environ: Mapping[str, str] | None = None
) -> list[Path] | None:
    """Write the adopted provider whole or not at all; None when ``name`` exists
    already adopting the same stack (nothing written)."""
    env = os.environ if environ is None else environ
    ref = parse_stack_ref(ref)
    url = env.get("PULUMI_BACKEND_URL") or PULUMI_CLOUD
    final = root.provider_dir(name)
    if final.exists():
        from ...world.record import read_record

        record = read_record(final / "provider.json")
        pul = record.settings.get("pulumi") if record else None
        if isinstance(pul, dict) and pul.get("adopted") and pul.get("stack") == ref:
            return None
        raise DreamlakeError(
            f"{final} exists and is not the adoption of {ref}; refusing to overwrite it — "
            "pick another name.",
            kind="exists_different",
            next_action=Run(command=commands.status(name)),
        )
    folder = Path(url[len("file://") :].split("?", 1)[0]) if url.startswith("file://") else None
    if folder is not None and not _on_file_backend(folder, ref):
        raise DreamlakeError(
            f"no stack {ref} in {url}: adopting needs the stack to exist there (set "
            "PULUMI_BACKEND_URL to the backend that holds it)",
            kind="stack_not_found",
            next_action=Shell(command=f"PULUMI_BACKEND_URL={url} pulumi stack ls --all"),
        )
    record = ProviderRecord(
        name=name,
        vendor=ADOPTED_VENDOR,
        backend="pulumi",
        template_version=1,
        engine_version=dreamlake.__version__,
        settings={"pulumi": {"stack": ref, "backendUrl": url, "adopted": True}},
        id=new_provider_id(),  # as every new provider: its rows keep it if the root moves
    )
    files = {
        "provider.json": record.to_json(),
        "pulumi/ADOPTED.md": adopted_md(name, ref, url),
    }
    root.providers.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".partial", dir=root.providers))
    try:
        for rel, text in files.items():
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        os.chmod(tmp, 0o755)
        try:
            os.rename(tmp, final)
        except OSError:
            if final.exists():
                return None
            raise
        return [final / rel for rel in files]
    finally:
        if tmp.exists():
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp)


def _on_file_backend(folder: Path, ref: str) -> bool:
    _org, project, stack = split_stack(ref)
    base = folder / ".pulumi" / "stacks"
    return any(
        (where / f"{stack}{ext}").exists()
        for where in (base / str(project), base)
        for ext in (".json", ".json.gz", ".json.zst")
    )


def not_ours(name: str, ref: str, verb: str, dream_dir: str | None = None) -> DreamlakeError:
    """plan / apply / destroy on an adopted stack: the team's own pipeline does that."""
    return DreamlakeError(
        f"'{name}' adopts the Pulumi stack {ref}: its program is managed where it lives, so "
        f"dreamlake does not {verb} it. Run `pulumi {verb}` there; dreamlake reads the "
        "stack's state and connects a daemon to the host its outputs name.",
        kind="adopted_stack",
        next_action=Run(command=commands.connect(name, dream_dir)),
    )
