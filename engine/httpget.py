"""One small JSON request for the hot path.

``status`` asks the control plane for claims on every run, and importing
``urllib.request`` (http.client, email, ssl) costs more than the rest of the run. A
plain ``http://`` request that no proxy setting applies to goes over a socket here:
HTTP/1.1, ``Connection: close``, a JSON body sent with its length, a
``Content-Length`` or chunked answer, bounded in size and time. ``https``, a proxy,
or an answer this reader does not understand goes through ``urllib.request``.
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any
from urllib.parse import urlsplit

LIMIT = 1024 * 1024


class _Unhandled(Exception):
    """Not for the socket path: urllib decides."""


def request_json(
    url: str,
    headers: dict[str, str],
    *,
    method: str = "GET",
    body: object | None = None,
    timeout: float,
    loopback: bool,
    limit: int = LIMIT,
) -> tuple[int, Any]:
    """``(status, decoded JSON answer or None unless 200)``; raises OSError or
    ValueError on failure. ``body`` is sent as JSON."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    headers = dict(headers, **({"Content-Type": "application/json"} if data is not None else {}))
    parts = urlsplit(url)
    proxied = any(os.environ.get(k) for k in ("http_proxy", "HTTP_PROXY")) and not loopback
    if parts.scheme == "http" and parts.hostname and not proxied:
        try:
            return _socket_request(
                method, parts.hostname, parts.port or 80, _target(parts), headers, data,
                timeout, limit,
            )  # fmt: skip
        except _Unhandled:
            pass
    return _urllib_request(
        method, url, headers, data, timeout=timeout, loopback=loopback, limit=limit
    )


def get_json(
    url: str, headers: dict[str, str], *, timeout: float, loopback: bool
) -> tuple[int, Any]:
    """A GET: ``request_json`` without a body."""
    return request_json(url, headers, timeout=timeout, loopback=loopback)


def _target(parts: Any) -> str:
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _socket_request(
    method: str,
    host: str,
    port: int,
    target: str,
    headers: dict[str, str],
    data: bytes | None,
    timeout: float,
    limit: int,
) -> tuple[int, Any]:
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if data is not None:
        lines.append(f"Content-Length: {len(data)}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (data or b"")
    deadline = time.monotonic() + timeout  # for the whole answer, not each read
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(request)
        chunks: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no complete answer within {timeout}s")
            sock.settimeout(left)
            data = sock.recv(65536)
            if not data:
                break
            size += len(data)
            if size > limit + 65536:
                raise ValueError("response too large")
            chunks.append(data)
    raw = b"".join(chunks)
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise _Unhandled("no header end")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    proto, _, rest = status_line.partition(" ")
    if not proto.startswith("HTTP/1."):
        raise _Unhandled(status_line)
    status = int(rest.split(" ", 1)[0])
    fields = {}
    for line in header_lines:
        k, _, v = line.partition(":")
        fields[k.strip().lower()] = v.strip()
    if fields.get("content-encoding", "identity") != "identity":
        raise _Unhandled("encoded body")
    if "chunked" in fields.get("transfer-encoding", "").lower():
        body = _unchunk(body)
    elif "content-length" in fields:
        n = int(fields["content-length"])
        if len(body) < n:
            raise ValueError("short body")
        body = body[:n]
    return status, json.loads(body) if status == 200 else None


def _unchunk(body: bytes) -> bytes:
    out = bytearray()
    while True:
        size_line, sep, body = body.partition(b"\r\n")
        if not sep:
            raise ValueError("truncated chunk")
        n = int(size_line.split(b";", 1)[0], 16)
        if n == 0:
            return bytes(out)
        out += body[:n]
        body = body[n + 2 :]


def _urllib_request(
    method: str,
    url: str,
    headers: dict[str, str],
    data: bytes | None,
    *,
    timeout: float,
    loopback: bool,
    limit: int,
) -> tuple[int, Any]:
    import urllib.request

    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    handlers = [urllib.request.ProxyHandler({})] if loopback else []
    with urllib.request.build_opener(*handlers).open(req, timeout=timeout) as resp:
        status = int(resp.status)
        return status, json.loads(resp.read(limit)) if status == 200 else None
