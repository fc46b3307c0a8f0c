"""The ssh hosts of the e2e tests: a real sshd on 127.0.0.1 (tests/sshd.py) for a
fixture's life, skipped with the reason where it cannot run here; one whose sessions
find programs of the test's first on PATH (test doubles for a host's tmux or
python); and an ``ssh`` provider's ``adopt.json`` pointed at such a host."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sshd import SSHServer, skip_reason, start_sshd

# what the sessions find on PATH after the test's own programs
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@contextmanager
def running_sshd(base: Path, first_on_path: Path | None = None) -> Iterator[SSHServer]:
    """sshd under ``base`` until the ``with`` ends; ``first_on_path``: a folder its
    sessions find first on PATH (see :func:`programs`)."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    env = {} if first_on_path is None else {"PATH": f"{first_on_path}:{SYSTEM_PATH}"}
    server = start_sshd(base, env=env)
    try:
        yield server
    finally:
        server.stop()


def programs(folder: Path, scripts: Mapping[str, str]) -> Path:
    """``folder`` holding each of ``scripts`` (name: its text) as an executable."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in scripts.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return folder


def edit_adopt(project: Path, name: str, **values: Any) -> Path:
    """The ssh provider ``name``'s ``adopt.json`` in ``project`` with ``values`` set,
    the rest of the file kept."""
    path = project / ".dream" / "providers" / name / "adopt.json"
    data = json.loads(path.read_text())
    data.update(values)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def point_at(project: Path, name: str, server: SSHServer) -> Path:
    """``adopt.json`` names ``server`` as the host: its address, login user and client
    key, and the queue ``default``."""
    return edit_adopt(
        project,
        name,
        host=server.host,
        user=server.user,
        port=server.port,
        queues=["default"],
        identity_file=str(server.client_key),
    )
