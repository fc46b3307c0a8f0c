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


def _send(server: ServerProc, method: str, path: str, body: bytes) -> tuple[int, str, Any]:
    req = urllib.request.Request(server.url + path, data=body, method=method)
    req.add_header("Authorization", f"Bearer {server.admin_token}")
    req.add_header("Content-Type", "application/json")
    try:
        urllib.request.urlopen(req, timeout=30)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("content-type", ""), json.loads(exc.read())
    raise AssertionError(f"{path} answered 2xx")


def test_the_middlewares_refuse_in_the_same_shape(server: ServerProc) -> None:
    """The body limit (413) and the JSON guard (422) answer before any route, and
    still as problems with ``kind``."""
    status, ctype, body = _send(
        server, "POST", "/api/namespaces", b'{"name": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    )
    assert status == 413 and ctype.startswith("application/problem+json")
    assert body["kind"] == body["error"] == "payload_too_large" and body["status"] == 413
    status, ctype, body = _send(server, "POST", "/api/namespaces", b"[" * 10_000 + b"]" * 10_000)
    assert status == 422 and ctype.startswith("application/problem+json")
    assert body["kind"] == "validation_error" and body["title"] == "Unprocessable Entity"


def test_a_shed_request_is_a_problem_with_retry_after() -> None:
    from dreamlake.controlplane.server.fleet.shedding import overloaded

    status, headers, raw = overloaded("too many requests waiting", (1, 4), fixed=3)
    assert status == 503 and dict(headers)[b"retry-after"] == b"3"
    assert dict(headers)[b"content-type"] == b"application/problem+json"
    body = json.loads(raw)
    assert body["kind"] == "overloaded" and body["status"] == 503
    assert body["detail"] == "too many requests waiting; retry after 3s"
