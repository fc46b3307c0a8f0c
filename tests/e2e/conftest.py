"""Real-binary fixtures for the connect journeys: an OpenSSH server on 127.0.0.1
(tests/sshd.py) and the control plane (``lakeshore serve`` on 127.0.0.1, a temp data
dir, workers live for 2 s after their last heartbeat)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import sshd as _sshd
from dreamlake.engine.verbs.demo import EmbeddedServer, start_server
from ssh_hosts import running_sshd


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_sshd.SSHServer]:
    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture(scope="session")
def lakeshore_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    srv = start_server(tmp_path_factory.mktemp("lakeshore"), live_seconds=2.0)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def control_plane(
    lakeshore_server: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> EmbeddedServer:
    """The server, with the environment pointing the engine (and subprocesses) at it."""
    for k, v in lakeshore_server.env().items():
        monkeypatch.setenv(k, v)
    return lakeshore_server
