"""Errors of the HTTP API are RFC 9457 problems (application/problem+json) carrying
the members the `dreamlake` and `lakeshore` JSON errors share (`kind`, and `error`,
which clients read), against a real server subprocess."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from lakeshore_fixtures import ServerProc

SHARES_SERVER = True  # its tests only read, or send what is refused: the session's server


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


def test_a_request_that_does_not_validate_keeps_a_sentence_in_detail(server: ServerProc) -> None:
    """RFC 9457: ``detail`` is a sentence; the per-field list is the ``errors``
    extension member; ``instance`` is the request id, the one echoed in X-Request-ID."""
    req = urllib.request.Request(server.url + "/api/namespaces", data=b'{"name": 7}', method="POST")
    req.add_header("Authorization", f"Bearer {server.admin_token}")
    req.add_header("Content-Type", "application/json")
    req.add_header("X-Request-ID", "req-7")
    try:
        urllib.request.urlopen(req, timeout=30)
        raise AssertionError("a name that is a number was accepted")
    except urllib.error.HTTPError as exc:
        status, echoed, body = exc.code, exc.headers["X-Request-ID"], json.loads(exc.read())
    assert status == 422 and echoed == "req-7" and body["instance"] == "req-7"
    assert isinstance(body["detail"], str) and body["detail"].startswith(
        "the request is not valid: "
    )
    assert "name" in body["detail"]
    assert body["errors"] and {"loc", "msg", "type"} <= set(body["errors"][0])
    # a middleware's answer (the JSON guard, before any route) carries the id too
    status, _, body = _send(server, "POST", "/api/namespaces", b"[" * 10_000 + b"]" * 10_000)
    assert status == 422 and len(body["instance"]) == 32 and isinstance(body["detail"], str)


def test_an_unusable_request_id_is_replaced(server: ServerProc) -> None:
    req = urllib.request.Request(server.url + "/api/no-such-route")
    req.add_header("X-Request-ID", "has spaces and\ttabs")
    try:
        urllib.request.urlopen(req, timeout=10)
    except urllib.error.HTTPError as exc:
        made, body = exc.headers["X-Request-ID"], json.loads(exc.read())
    assert made != "has spaces and\ttabs" and body["instance"] == made


def test_the_sentence_of_many_field_errors() -> None:
    from dreamlake.controlplane.server.problem import problem

    errors = [
        {"loc": ["body", f"f{i}"], "msg": "Field required", "type": "missing"} for i in range(5)
    ]
    body = problem(422, "validation_error", errors)
    assert body["detail"] == (
        "the request is not valid: body.f0: Field required; body.f1: Field required; "
        "body.f2: Field required (and 2 more, in errors)"
    )
    assert body["errors"] == errors and "instance" not in body  # not serving a request
