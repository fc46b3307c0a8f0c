from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import sshd as _sshd
from ssh_hosts import running_sshd


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_sshd.SSHServer]:
    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server
