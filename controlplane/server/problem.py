"""The one shape of an HTTP error: an RFC 9457 problem (``application/problem+json``:
``type``, ``title``, ``status``, ``detail`` a sentence, ``instance`` the request id)
with the members the ``dreamlake`` and ``lakeshore`` JSON errors share (``kind``,
and ``error``, the same code, which clients read) and, for a request that does not
validate, the ``errors`` extension member (one entry per field). No FastAPI here:
the pure ASGI middlewares (body limit, JSON guard, load shedding) answer through it
too."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from .requestlog import REQUEST_ID

PROBLEM_JSON = "application/problem+json"


def problem(status: int, error: str, detail: Any = None) -> dict[str, Any]:
    """The body of an error: an RFC 9457 problem with our ``kind`` / ``error``.
    ``detail`` is a sentence; given a list (what is wrong with each field of a
    request), the list is the ``errors`` extension member and ``detail`` a sentence
    made of it. ``instance`` is the request's id (``X-Request-ID``), when serving one."""
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status}
    if isinstance(detail, list):
        body["detail"] = sentence(detail)
        body["errors"] = detail
    else:
        body["detail"] = detail
    rid = REQUEST_ID.get()
    if rid is not None:
        body["instance"] = rid
    body["kind"] = body["error"] = error
    return body


def sentence(errors: list[Any], shown: int = 3) -> str:
    """One sentence for a list of field errors (``{"loc": [...], "msg": ...}``)."""
    parts = []
    for err in errors[:shown]:
        if isinstance(err, dict):
            loc = ".".join(str(p) for p in err.get("loc") or ()) or "the request"
            parts.append(f"{loc}: {err.get('msg') or err.get('type') or 'not valid'}")
        else:
            parts.append(str(err))
    more = len(errors) - shown
    tail = f" (and {more} more, in errors)" if more > 0 else ""
    return (
        "the request is not valid: " + "; ".join(parts) + tail
        if parts
        else "the request is not valid"
    )


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
