"""Where this configuration's state lives, from files alone (no init, no process).

``.terraform/terraform.tfstate`` (written by ``init``) names the backend and its
config; ``.terraform/environment`` the selected workspace. Without them, a
``backend``/``cloud`` block in the ``*.tf`` files is looked for. The local
backend keeps ``terraform.tfstate`` (or its ``path``) for the default workspace
and ``terraform.tfstate.d/<ws>/terraform.tfstate`` for the others.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...settings.readers import read_text
from ...settings.records import record
from .statefile import STATE_FILE

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

_BACKEND_BLOCK = re.compile(r'^\s*(?:backend\s+"([\w-]+)"|cloud)\s*\{', re.MULTILINE)


@record(eq=False)  # never compared (statefile.StateFile)
class StateLocation:
    """Where terraform keeps this configuration's state."""

    path: Path  # the local state file (meaningful when ``remote`` is None)
    remote: str | None = None  # the backend type when state is not in a local file
    workspace: str = "default"


def _init_backend(tf_dir: Path) -> tuple[str | None, dict[str, Any]]:
    try:
        from ...settings.readers import read_json

        data = read_json(tf_dir / ".terraform" / "terraform.tfstate")
        backend = data.get("backend") or {}
        return backend.get("type"), dict(backend.get("config") or {})
    except (OSError, ValueError, AttributeError, TypeError):
        return None, {}


def _declared_backend(tf_dir: Path) -> str | None:
    for tf in _tf_files(tf_dir):
        try:
            text = read_text(tf)
        except (OSError, ValueError):
            continue
        m = _BACKEND_BLOCK.search(text)
        if m:
            return m.group(1) or "cloud"
    return None


def _tf_files(tf_dir: Path) -> list[Path]:
    """``sorted(tf_dir.glob("*.tf"))`` from the folder's listing: the glob compiles its
    pattern into a regex (about 0.5 ms) on every run that reads where the state is,
    the apply's last look at the world among them."""
    try:
        names = os.listdir(tf_dir)
    except OSError:
        return []
    return sorted(tf_dir / name for name in names if name.endswith(".tf"))


def state_location(tf_dir: Path) -> StateLocation:
    try:
        workspace = read_text(tf_dir / ".terraform" / "environment", limit=4096).strip()
    except (OSError, ValueError):
        workspace = ""
    workspace = workspace or "default"
    kind, config = _init_backend(tf_dir)
    if kind is None:
        kind = _declared_backend(tf_dir)
    if kind not in (None, "local"):
        return StateLocation(tf_dir / STATE_FILE, remote=kind, workspace=workspace)
    if workspace != "default":
        ws_dir = config.get("workspace_dir") or "terraform.tfstate.d"
        return StateLocation(tf_dir / ws_dir / workspace / STATE_FILE, workspace=workspace)
    path = config.get("path")
    return StateLocation(tf_dir / path if path else tf_dir / STATE_FILE)
