"""The launch and queue routes check their bodies before anything is stored or looked
up, like the registry's: NUL anywhere, and a queue name that fits its column, get a
422 with the same answer on SQLite and PostgreSQL (a real ``lakeshore serve`` on
127.0.0.1 over each)."""

from __future__ import annotations

import pytest
from dreamlake.controlplane.client import ApiFailure
from lakeshore_fixtures import ServerProc

NS = "/api/namespaces/default"


def _status(server: ServerProc, path: str, body: object) -> tuple[int, str]:
    try:
        server.admin.request("POST", NS + path, body)
    except ApiFailure as exc:
        return exc.status, str(exc.detail)
    return 200, ""


@pytest.mark.parametrize(
    "body",
    [
        {"provider": "aws", "command": "echo \x00"},
        {"provider": "aws", "queue": "gp\x00u"},
        {"provider": "aws", "runConfig": {"kwargs": {"k\x00": 1}}},
        {"provider": "aws", "queue": "q" * 64},
    ],
)
def test_launch_bodies_are_checked_first(server: ServerProc, body: dict[str, object]) -> None:
    status, detail = _status(server, "/launch", body)
    assert status == 422, detail
    assert server.admin.request("GET", NS + "/instances", query={"all": "true"})["instances"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"name": "gpu", "provider": "a\x00ws"},
        {"name": "gpu", "provider": "aws", "mode": "m\x00"},
    ],
)
def test_queue_bodies_are_checked_first(server: ServerProc, body: dict[str, object]) -> None:
    status, detail = _status(server, "/queues", body)
    assert status == 422, detail
    assert "NUL" in detail
