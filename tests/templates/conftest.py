"""The ``tf_fmt`` fixture: a terraform >= 1.11 binary, or a skip that says so."""

from __future__ import annotations

import pytest
from tf_binaries import terraform_at_least


@pytest.fixture
def tf_fmt() -> str:
    tf = terraform_at_least((1, 11))
    if tf is None:
        pytest.skip("needs a terraform >= 1.11 binary (TERRAFORM_BINARY or on PATH)")
    return tf
