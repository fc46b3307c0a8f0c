"""Find the terraform binaries the template tests run (TERRAFORM_BINARY, PATH, the venv)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path


@cache
def version_of(binary: str) -> tuple[int, ...] | None:
    try:
        r = subprocess.run(
            [binary, "version", "-json"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        v = json.loads(r.stdout)["terraform_version"]
        return tuple(int(x) for x in v.split("-")[0].split("."))
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired):
        return None


def candidates() -> list[str]:
    seen: list[str] = []
    for c in (
        os.environ.get("TERRAFORM_BINARY"),
        "/usr/local/bin/terraform",
        shutil.which("terraform"),
        str(Path(sys.executable).parent / "terraform"),
    ):
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            real = str(Path(c).resolve())
            if real not in [str(Path(s).resolve()) for s in seen]:
                seen.append(c)
    return [c for c in seen if version_of(c) is not None]


def terraform_at_least(minimum: tuple[int, ...]) -> str | None:
    return next((c for c in candidates() if (version_of(c) or ()) >= minimum), None)


def terraform_below(maximum: tuple[int, ...]) -> str | None:
    return next((c for c in candidates() if (version_of(c) or (999,)) < maximum), None)
