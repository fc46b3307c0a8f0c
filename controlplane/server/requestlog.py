"""Every request's id, and the access log: one record per request.

The id is the client's ``X-Request-ID`` when it sends a usable one (1 to 128 of
``A-Z a-z 0-9 . _ : - @``), else a new one; it is echoed in the ``X-Request-ID``
response header and is the ``instance`` of every problem body answered for the
request (:mod:`.problem` reads it from :data:`REQUEST_ID`).

The access log is the ``lakeshore.access`` logger at ``info`` (``lakeshore serve
--access-log`` turns it on): one record per request with ``method``, ``route``
(the route's template, ``/api/namespaces/{namespace}/providers``; null when no route
matched or a middleware answered first), ``status``, ``durationMs``, ``client`` and
``requestId`` — fields of their own under ``--log-format json``, one line of text
otherwise. A pure ASGI middleware (no FastAPI here), outermost: the answers of the
other middlewares get an id too.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from contextvars import ContextVar
from typing import Any

REQUEST_ID: ContextVar[str | None] = ContextVar("lakeshore_request_id", default=None)
HEADER = b"x-request-id"
USABLE = re.compile(r"[A-Za-z0-9._:@-]{1,128}")

log = logging.getLogger("lakeshore.access")


def request_id(headers: list[tuple[bytes, bytes]]) -> str:
    """The client's ``X-Request-ID`` when usable, else a new one."""
    for key, value in headers:
        if key.lower() == HEADER:
            text = value.decode("latin-1")
            if USABLE.fullmatch(text):
                return text
            break
    return uuid.uuid4().hex


class RequestLog:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(scope.get("headers") or [])
        REQUEST_ID.set(rid)  # the request runs in a task of its own: no reset needed
        started = time.perf_counter()
        status = 500  # what the client gets when nothing answered (the server's own 500)

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [*message.get("headers", ()), (HEADER, rid.encode("latin-1"))]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            if log.isEnabledFor(logging.INFO):
                _record(scope, status, time.perf_counter() - started, rid)


def _record(scope: dict[str, Any], status: int, seconds: float, rid: str) -> None:
    route = getattr(scope.get("route"), "path", None)
    client = scope.get("client")
    fields = {
        "method": scope.get("method"),
        "route": route,
        "status": status,
        "durationMs": round(seconds * 1000, 3),
        "client": f"{client[0]}:{client[1]}" if client else None,
        "requestId": rid,
    }
    log.info(
        "%s %s %d %.1fms client=%s id=%s",
        fields["method"],
        route or "-",
        status,
        fields["durationMs"],
        fields["client"] or "-",
        rid,
        extra={"fields": fields},
    )
