"""Fixtures for the pulumi backend tests (helpers live in ``pulumi_helpers``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pulumi_helpers import FIXTURES, write_provider


@pytest.fixture
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(
            "needs state files written by the pulumi CLI, which is not installed here: "
            "the upstream corpus ($DREAMLAKE_FIXTURES, or shared/fixtures beside the checkout)"
        )
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
