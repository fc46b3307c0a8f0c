"""One bounded JSON request to the control plane, over the standard library's
``http.client``.

The answer is bounded in size (``limit`` bytes) and in time as a whole: ``timeout``
ends the request even when a server keeps sending a byte at a time. A loopback
address never goes through a proxy; any other goes through ``urllib.request`` when a
proxy setting for its scheme is present (``urllib.request`` honours ``no_proxy``),
else straight over ``http.client``.
"""

from __future__ import annotations

import io
import json
import os
import time
from urllib.parse import urlsplit

from . import tracing

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    import http.client
    from typing import Any

LIMIT = 1024 * 1024
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (its requests never go through a proxy)."""
    return (urlsplit(url).hostname or "") in LOOPBACK_HOSTS


def request_json(
    url: str,
    headers: dict[str, str],
    *,
    method: str = "GET",
    body: object | None = None,
    timeout: float,
    loopback: bool,
    limit: int = LIMIT,
    ca: str | None = None,
) -> tuple[int, Any]:
    """``(status, decoded JSON answer or None unless 200)``; raises OSError,
    ValueError or ``http.client.HTTPException`` on failure. ``body`` is sent as JSON.
    An ``https`` server is verified against ``ca`` (a CA certificate file), else
    ``LAKESHORE_CA``, else the system's trust store; never not verified."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    if data is not None:
        headers = dict(headers, **{"Content-Type": "application/json"})
    if tracing.active():  # the command's trace goes on in the server (OTEL_*)
        headers = dict(headers)
        tracing.inject(headers)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url}")
    proxy_vars = (f"{parts.scheme}_proxy", f"{parts.scheme.upper()}_PROXY")
    if not loopback and any(os.environ.get(v) for v in proxy_vars):
        return _through_proxy(method, url, headers, data, timeout, limit, ca)
    import http.client  # with a request to make: ``plan`` reads is_loopback only

    deadline = time.monotonic() + timeout
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        from dreamlake.controlplane.tlsclient import client_context

        conn = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout, context=client_context(ca)
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)

    def bounded(sock: Any, **kw: Any) -> http.client.HTTPResponse:
        reads: Any = _Bounded(sock, deadline)  # HTTPResponse only calls makefile("rb")
        return http.client.HTTPResponse(reads, **kw)

    conn.response_class = bounded  # type: ignore[assignment]
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request(method, target, body=data, headers=headers)
        resp = conn.getresponse()
        return resp.status, _decode(resp.status, resp.read(limit + 1), limit)
    finally:
        conn.close()


def _decode(status: int, raw: bytes, limit: int) -> Any:
    if len(raw) > limit:
        raise ValueError("response too large")
    return json.loads(raw) if status == 200 else None


def _through_proxy(
    method: str,
    url: str,
    headers: dict[str, str],
    data: bytes | None,
    timeout: float,
    limit: int,
    ca: str | None = None,
) -> tuple[int, Any]:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    handlers: list[Any] = []
    if url.startswith("https:"):
        from dreamlake.controlplane.tlsclient import client_context

        handlers.append(urllib.request.HTTPSHandler(context=client_context(ca)))
    try:
        # A fresh opener reads the proxy settings now (urlopen's is built once).
        with urllib.request.build_opener(*handlers).open(req, timeout=timeout) as resp:
            return int(resp.status), _decode(int(resp.status), resp.read(limit + 1), limit)
    except urllib.error.HTTPError as err:
        return int(err.code), None


class _Bounded:
    """The connection's socket as ``HTTPResponse`` reads it, every read cut to the
    time left before ``deadline``."""

    def __init__(self, sock: Any, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_Reader(self._sock, self._deadline))


class _Reader(io.RawIOBase):
    def __init__(self, sock: Any, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no complete answer in time")
        self._sock.settimeout(left)
        return int(self._sock.recv_into(buf))
