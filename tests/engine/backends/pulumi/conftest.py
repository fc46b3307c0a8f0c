"""Fixtures for the pulumi backend tests (helpers live in ``pulumi_helpers``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pulumi_helpers import FIXTURES, write_provider


@pytest.fixture
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"needs the shared pulumi fixtures at {FIXTURES}")
    return FIXTURES


@pytest.fixture(autouse=True)
def _no_pulumi_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in (
        "PULUMI_BACKEND_URL",
        "PULUMI_CONFIG_PASSPHRASE",
        "PULUMI_CONFIG_PASSPHRASE_FILE",
        "PULUMI_EXPERIMENTAL",
    ):
        monkeypatch.delenv(k, raising=False)


@pytest.fixture
def provider(tmp_path: Path) -> Callable[..., Path]:
    def make(**kw: object) -> Path:
        return write_provider(tmp_path, **kw)  # type: ignore[arg-type]

    return make
