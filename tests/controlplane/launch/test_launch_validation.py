"""The launch and queue routes check their bodies before anything is stored or looked
up, like the registry's: NUL anywhere, and a queue name that fits its column, get a
422 with the same answer on SQLite and PostgreSQL (a real ``lakeshore serve`` on
127.0.0.1 over each)."""

from __future__ import annotations

import secrets

import pytest
from dreamlake.controlplane.client import ApiFailure
from lakeshore_fixtures import ServerProc

SHARES_SERVER = True  # its requests go to a namespace of its own: the session's server


@pytest.fixture(scope="module")
def ns(server: ServerProc) -> str:
    """The module's own namespace (its launches would list there)."""
    name = f"val-{secrets.token_hex(4)}"
    server.admin.create_namespace(name)
    return f"/api/namespaces/{name}"


def _status(server: ServerProc, path: str, body: object) -> tuple[int, str]:
    try:
        server.admin.request("POST", path, body)
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
def test_launch_bodies_are_checked_first(
    server: ServerProc, ns: str, body: dict[str, object]
) -> None:
    status, detail = _status(server, ns + "/launch", body)
    assert status == 422, detail
    assert server.admin.request("GET", ns + "/instances", query={"all": "true"})["instances"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"name": "gpu", "provider": "a\x00ws"},
        {"name": "gpu", "provider": "aws", "mode": "m\x00"},
    ],
)
def test_queue_bodies_are_checked_first(
    server: ServerProc, ns: str, body: dict[str, object]
) -> None:
    status, detail = _status(server, ns + "/queues", body)
    assert status == 422, detail
    assert "NUL" in detail
