"""The target status: desired state in the provider's own configuration.

``target_status`` is ``active`` or ``suspended``. It lives where the provider's other
decisions live — ``terraform/terraform.tfvars`` (terraform), the stack file
``Pulumi.<stack>.yaml`` as ``<project>:target_status`` (pulumi), ``adopt.json`` (ssh)
— so there is one source of truth and no stored phase. Absent means ``active``:
providers created before the setting existed keep working unchanged.

Reading is a cheap line scan (``status`` must stay fast); writing changes only the
one line (or appends it) and is atomic, so the rest of the user's file is kept.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..contract.errors import DreamlakeError
from ..settings.fsutil import atomic_write
from ..world.paths import ProviderPaths

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if not TYPE_CHECKING:  # the alias below at run time, without typing (contract/forms.py)
    from ..contract.forms import Literal
else:
    from typing import Literal

Target = Literal["active", "suspended"]
TARGETS: tuple[str, ...] = ("active", "suspended")
KEY = "target_status"
DEFAULT: Target = "active"

_TFVARS_LINE = re.compile(r"^(\s*)target_status\s*=\s*(.*?)\s*(#.*)?$")
_TFVARS_COMMENT = (
    "# Desired lifecycle state: active (running) or suspended (stopped, state kept).\n"
    "# `dreamlake provider suspend|resume` set it; `reconcile` acts on it.\n"
)


def target_file(paths: ProviderPaths, backend: str) -> Path:
    """The file holding ``target_status`` for a provider with ``backend``."""
    if backend == "none":
        return paths.adopt_json
    if backend == "pulumi":
        from ..scan.pulumi import stack_file_for

        return stack_file_for(paths)
    return paths.terraform / "terraform.tfvars"


def _bad(
    path: Path, line: int | None, value: object, name: str, dream_dir: str | None
) -> DreamlakeError:
    from ..contract import commands
    from ..contract.result import EditThenContinue

    where = f"{path}:{line}" if line else str(path)
    return DreamlakeError(
        f"{where}: {KEY} is {value!r}; it must be one of {', '.join(TARGETS)} "
        "(or absent, which means active).",
        kind="bad_target",
        next_action=EditThenContinue(file=str(path), command=commands.status(name, dream_dir)),
    )


def read_target(paths: ProviderPaths, backend: str, dream_dir: str | None = None) -> Target:
    """The provider's target status (``active`` when not set). ``dream_dir``: the
    flag as given, repeated in the next action of a bad value."""
    from ..settings.readers import read_text

    path = target_file(paths, backend)
    try:
        text = read_text(path)
    except (FileNotFoundError, NotADirectoryError):
        return DEFAULT
    except (OSError, ValueError):
        return DEFAULT  # unreadable (too large, not UTF-8): the decision scan reports it
    value: object = None
    line: int | None = None
    if backend == "none":
        from ..settings.readers import loads_json

        try:
            data = loads_json(text, path=path)  # bounded depth; 5,000 digits are a ValueError
        except ValueError:
            return DEFAULT  # the adopt scan reports a broken adopt.json
        value = data.get(KEY) if isinstance(data, dict) else None
    elif backend == "pulumi":
        from ..backends.pulumi.project import PulumiProject
        from ..scan.pulumi import read_stack_config

        try:
            config, lines, _ = read_stack_config(text, PulumiProject.of(paths.dir).name)
        except ValueError:
            return DEFAULT  # the pulumi scan reports a broken stack file
        value, line = config.get(KEY), lines.get(KEY)
    else:
        for i, raw in enumerate(text.splitlines(), 1):
            m = _TFVARS_LINE.match(raw)
            if m:
                value, line = m.group(2).strip().strip('"'), i
    if value is None or value == "":
        return DEFAULT
    if value not in TARGETS:
        raise _bad(path, line, value, paths.name, dream_dir)
    return value  # type: ignore[return-value]


def write_target(paths: ProviderPaths, backend: str, target: Target) -> Path | None:
    """Set the target status; returns the file written, None when it already said so."""
    if target not in TARGETS:
        raise ValueError(target)
    if read_target(paths, backend) == target and _explicit(paths, backend):
        return None
    if backend == "pulumi":
        _refuse_adopted_stack(paths)
    path = target_file(paths, backend)
    from ..settings.readers import loads_json, read_text

    text = read_text(path) if path.exists() else ""
    if backend == "none":
        data = loads_json(text, path=path) if text.strip() else {}
        data[KEY] = target
        new = json.dumps(data, indent=2) + "\n"
    elif backend == "pulumi":
        new = _pulumi_text(text, paths, target)
    else:
        new = _tfvars_text(text, target)
    atomic_write(path, new)
    return path


def _refuse_adopted_stack(paths: ProviderPaths) -> None:
    """An adopted Pulumi stack's program and config are the team's: a target written
    here would be read by nothing but ``status``, which would then report a running
    stack as suspended."""
    from ..backends.pulumi.project import PulumiProject

    project = PulumiProject.of(paths.dir)
    if not project.adopted:
        return
    from ..contract import commands
    from ..contract.result import Run

    raise DreamlakeError(
        f"'{paths.name}' adopts the Pulumi stack {project.stack}: its lifecycle is managed "
        "where its program lives, so dreamlake sets no target status for it; stop or start "
        "it there. Nothing was written.",
        kind="adopted_stack",
        next_action=Run(command=commands.status(paths.name)),
    )


def _explicit(paths: ProviderPaths, backend: str) -> bool:
    """Whether the file names a target at all (an absent one reads as active)."""
    path = target_file(paths, backend)
    from ..settings.readers import read_text

    try:
        text = read_text(path)
    except (OSError, ValueError):
        return False
    if backend == "none":
        return f'"{KEY}"' in text
    if backend == "pulumi":
        return f":{KEY}:" in text
    return any(_TFVARS_LINE.match(line) for line in text.splitlines())


def _tfvars_text(text: str, target: Target) -> str:
    lines = text.splitlines(keepends=True)
    for i, raw in enumerate(lines):
        m = _TFVARS_LINE.match(raw.rstrip("\n"))
        if m:
            comment = f"  {m.group(3)}" if m.group(3) else ""
            lines[i] = f'{m.group(1)}{KEY} = "{target}"{comment}\n'
            return "".join(lines)
    sep = "" if not text or text.endswith("\n") else "\n"
    return f'{text}{sep}\n{_TFVARS_COMMENT}{KEY} = "{target}"\n'


def _pulumi_text(text: str, paths: ProviderPaths, target: Target) -> str:
    from ..backends.pulumi.project import PulumiProject

    key = f"{PulumiProject.of(paths.dir).name}:{KEY}"
    line_re = re.compile(rf"^(\s+){re.escape(key)}\s*:.*$")
    lines = text.splitlines(keepends=True)
    for i, raw in enumerate(lines):
        m = line_re.match(raw.rstrip("\n"))
        if m:
            lines[i] = f"{m.group(1)}{key}: {target}\n"
            return "".join(lines)
    for i, raw in enumerate(lines):
        if re.match(r"^config\s*:\s*(\{\s*\})?\s*$", raw.rstrip("\n")):
            lines[i] = "config:\n"
            lines.insert(i + 1, f"  {key}: {target}\n")
            return "".join(lines)
    sep = "" if not text or text.endswith("\n") else "\n"
    return f"{text}{sep}config:\n  {key}: {target}\n"


__all__ = ["DEFAULT", "KEY", "TARGETS", "Target", "read_target", "target_file", "write_target"]
