"""Request body size limit (413), checked on Content-Length and on the stream."""

from __future__ import annotations

from typing import Any

from .problem import problem_bytes, problem_headers

Scope = dict[str, Any]
DRAIN_FACTOR = 16
"""Bodies up to this many times the limit are read and dropped before the 413."""
Message = dict[str, Any]


def body_length(scope: Scope) -> int | None:
    """The request body's declared length (0 without one); None when it is sent
    chunked or the header is not a number."""
    length = 0
    for key, value in scope.get("headers", []):
        if key == b"transfer-encoding":
            return None
        if key == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return None
    return length


class BodySizeLimit:
    """Pure ASGI middleware: refuse bodies larger than ``max_bytes`` with 413."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope.get("headers", []):
            if key == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = 0
                if length > self.max_bytes:
                    if length <= self.max_bytes * DRAIN_FACTOR:
                        # read (and drop) what the client is sending, so it sees the
                        # 413 instead of a broken pipe mid-upload
                        while (await receive()).get("more_body"):
                            pass
                    await self._refuse(send)
                    return
        seen = 0
        started = False
        refused = False

        async def limited_receive() -> Message:
            nonlocal seen, refused
            message: Message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes and not refused:
                    refused = True
                    if not started:
                        await self._refuse(send)
                    # read (and drop) the rest, within bounds, so a streaming client
                    # sees the 413 instead of a broken pipe mid-upload
                    more = bool(message.get("more_body"))
                    while more and seen <= self.max_bytes * DRAIN_FACTOR:
                        nxt: Message = await receive()
                        if nxt["type"] != "http.request":
                            break
                        seen += len(nxt.get("body", b""))
                        more = bool(nxt.get("more_body"))
                    return {"type": "http.disconnect"}
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except Exception:
            if not refused:
                raise

    async def _refuse(self, send: Any) -> None:
        body = problem_bytes(
            413, "payload_too_large", f"request body exceeds {self.max_bytes} bytes"
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": problem_headers(body, (b"connection", b"close")),
            }
        )
        await send({"type": "http.response.body", "body": body})
