"""Errors of the HTTP API are RFC 9457 problems (application/problem+json) carrying
the members the `dreamlake` and `lakeshore` JSON errors share (`kind`, and `error`,
which clients read), against a real server subprocess."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from lakeshore_fixtures import ServerProc


def _error(server: ServerProc, path: str, token: str | None = None) -> tuple[int, str, Any]:
    req = urllib.request.Request(server.url + path)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        urllib.request.urlopen(req, timeout=10)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("content-type", ""), json.loads(exc.read())
    raise AssertionError(f"{path} answered 2xx")


def test_errors_are_problem_json_with_the_shared_members(server: ServerProc) -> None:
    status, ctype, body = _error(server, "/api/namespaces/default/providers/x/claims")
    assert status == 401 and ctype.startswith("application/problem+json")
    assert body["type"] == "about:blank" and body["title"] == "Unauthorized"
    assert body["status"] == 401 and isinstance(body["detail"], str)
    assert body["kind"] == body["error"] == "unauthorized"
    status, ctype, body = _error(server, "/api/no-such-route", token=server.admin_token)
    assert status == 404 and ctype.startswith("application/problem+json")
    assert body["kind"] == "not_found" and body["title"] == "Not Found"
