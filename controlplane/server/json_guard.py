"""Refuse what no backend can store faithfully, before any route sees it.

:class:`JsonGuard` (pure ASGI middleware) answers 422 for

* a NUL character anywhere in the path or the query string (``%00`` included):
  PostgreSQL text cannot hold it, SQLite would, so both refuse it;
* a JSON body nested deeper than ``max_depth``, holding ``NaN`` / ``Infinity``
  (not JSON; SQLite would turn them into null, PostgreSQL would fail), a number too
  large for a double (``1e400``) or an integer with more than ``MAX_INT_DIGITS``
  digits (text that is not JSON at all is left to FastAPI's validation);
* a JSON body with a string or a key UTF-8 cannot encode (a lone surrogate such as
  ``"\\udcff"``: JSON allows the escape, no backend and no answer can hold it), the
  422 naming the field.

So a body that reaches a route is plain, finite, bounded JSON, whatever the backend.
The guard sits inside :class:`~.gate.Gate`: it never reads a body the gate refused.
:func:`refuse_nul` is the body-level NUL check the registry models run.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..text import find_unencodable
from .problem import problem_bytes, problem_headers

MAX_INT_DIGITS = 19  # a signed 64-bit integer has at most 19 digits
DEFAULT_MAX_DEPTH = 32
OFF_LOOP_BYTES = 32 * 1024
"""Bodies larger than this are checked on a worker thread, not the event loop (only
an authenticated caller's body gets this far: see gate.py; its size is bounded by
``BodySizeLimit`` and its nesting by ``max_depth``)."""

Scope = dict[str, Any]
Message = dict[str, Any]


class JsonRefused(ValueError):
    """Why a body was refused (a sentence for the 422's detail), and where (the
    ``loc`` of the error: ``["body", "kwargs", "host"]``)."""

    def __init__(self, message: str, loc: list[str] | None = None) -> None:
        super().__init__(message)
        self.loc = loc or ["body"]


def refuse_nul(value: Any, where: str = "body") -> None:
    """Raise :class:`ValueError` when any key or string in ``value`` holds NUL."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise ValueError(f"{path} contains a NUL character, which cannot be stored")
        elif isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str) and "\x00" in key:
                    raise ValueError(f"a key in {path} contains a NUL character")
                stack.append((sub, f"{path}.{key}"))
        elif isinstance(item, list):
            stack.extend((sub, f"{path}[{i}]") for i, sub in enumerate(item))


def _constant(name: str) -> Any:
    raise JsonRefused(f"{name} is not JSON: numbers must be finite")


def _int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > MAX_INT_DIGITS:
        raise JsonRefused(
            f"the integer {text[:12]}... has {len(digits)} digits; at most {MAX_INT_DIGITS} fit"
        )
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonRefused(f"the number {text[:24]} is too large (it does not fit a double)")
    return value


def depth_of(value: Any) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
            deepest = max(deepest, depth + 1)
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
            deepest = max(deepest, depth + 1)
    return deepest


def _quick_depth(raw: bytes) -> int:
    """Bracket depth of a JSON text, outside strings (checked before parsing, so a
    10,000-deep body never reaches the recursive parser)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x7B, 0x5B):  # { [
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x7D, 0x5D):
            depth -= 1
    return deepest


_NOT_JSON = object()


def parse_strict(raw: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """``raw`` parsed as plain, finite, bounded JSON, or :class:`JsonRefused`."""
    if _quick_depth(raw) > max_depth:
        raise JsonRefused(f"the JSON body nests deeper than {max_depth} levels")
    text: bytes | str = raw
    why = "it holds a lone surrogate, which UTF-8 cannot encode"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        # each byte that is not UTF-8 becomes a lone surrogate, found below in its field
        text = raw.decode("utf-8", "surrogateescape")
        why = "it holds bytes that are not UTF-8 (shown as lone surrogates)"
    try:
        value = json.loads(text, parse_constant=_constant, parse_int=_int, parse_float=_float)
    except JsonRefused:
        raise
    except RecursionError:
        raise JsonRefused(f"the JSON body nests deeper than {max_depth} levels") from None
    except ValueError:
        return _NOT_JSON  # FastAPI's own validation says what is wrong with it
    bad = find_unencodable(value)
    if bad is not None:
        path, what = bad
        where = ".".join(path) or "the body"
        raise JsonRefused(
            f"{where}: {what} ({why}); send text that is valid Unicode in UTF-8",
            ["body", *path],
        )
    return value


def _has_nul(scope: Scope) -> bool:
    if "\x00" in scope.get("path", ""):
        return True
    raw_path = scope.get("raw_path") or b""
    query = scope.get("query_string") or b""
    return b"%00" in raw_path or b"%00" in query or b"\x00" in query


class JsonGuard:
    """Pure ASGI middleware; see the module docstring."""

    def __init__(self, app: Any, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.app = app
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _has_nul(scope):
            await _refuse(send, "the path or query contains a NUL character (%00)", ["path"])
            return
        if scope.get("method") not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message: Message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        if raw.strip():
            try:
                if len(raw) > OFF_LOOP_BYTES:  # never hold the event loop for long
                    from anyio import to_thread

                    await to_thread.run_sync(parse_strict, raw, self.max_depth)
                else:
                    parse_strict(raw, self.max_depth)
            except JsonRefused as exc:
                await _refuse(send, str(exc), exc.loc)
                return
        await self.app(scope, _replay([{"type": "http.request", "body": raw}]), send)


def _replay(messages: list[Message]) -> Any:
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        return {"type": "http.disconnect"}

    return receive


async def _refuse(send: Any, detail: str, loc: list[str]) -> None:
    """422 in the shape of every validation error: a list of ``{loc, msg, type}``."""
    error = {"loc": loc, "msg": detail, "type": "value_error"}
    body = problem_bytes(422, "validation_error", [error])
    await send({"type": "http.response.start", "status": 422, "headers": problem_headers(body)})
    await send({"type": "http.response.body", "body": body})
