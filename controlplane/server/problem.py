"""The one shape of an HTTP error: an RFC 9457 problem (``application/problem+json``)
with the members the ``dreamlake`` and ``lakeshore`` JSON errors share (``kind``,
and ``error``, the same code, which clients read). No FastAPI here: the pure ASGI
middlewares (body limit, JSON guard, load shedding) answer through it too."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

PROBLEM_JSON = "application/problem+json"


def problem(status: int, error: str, detail: Any = None) -> dict[str, Any]:
    """The body of an error: an RFC 9457 problem with our ``kind`` / ``error``."""
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    return {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
        "kind": error,
        "error": error,
    }


def problem_bytes(status: int, error: str, detail: Any = None) -> bytes:
    """:func:`problem`, encoded."""
    return json.dumps(problem(status, error, detail)).encode()


def problem_headers(body: bytes, *extra: tuple[bytes, bytes]) -> list[tuple[bytes, bytes]]:
    """The headers of a problem answer whose body is ``body``."""
    return [
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
