"""Tokens of an HCL expression, and quoted strings read into template parts."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import EvalError, Unevaluable
from .values import Respelled, nfc, parse_number


@dataclass(frozen=True)
class Tok:
    kind: str  # num, str, ident, op, eof
    value: Any
    pos: int


_OPS: tuple[str, ...] = ("...", "==", "!=", "<=", ">=", "&&", "||", "=>", *"<>!+-*/%?:()[]{},.=")
_NUM_RE = re.compile(r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


# Parses the expression of a ``${...}`` starting at the index after ``${``: returns
# its node and the index after the closing ``}``. The parser hands in its own, so
# the lexer needs no parser of its own.
Interpolate = Callable[[str, int], tuple[Any, int]]


def read_string(src: str, i: int, interpolate: Interpolate) -> tuple[list[str | Any], int]:
    """Read a quoted template starting after the opening quote.

    Returns its parts (literal text, or the node ``interpolate`` parsed for a
    ``${...}``) and the index after the closing quote."""
    parts: list[str | Any] = []
    buf: list[str] = []
    n = len(src)
    while i < n:
        c = src[i]
        if c == '"':
            if buf:
                parts.append(nfc("".join(buf)))
            return parts, i + 1
        if c == "\\":
            if i + 1 >= n:
                break
            e = src[i + 1]
            if e in _ESCAPES:
                buf.append(_ESCAPES[e])
                i += 2
                continue
            if e in "uU":
                width = 4 if e == "u" else 8
                digits = src[i + 2 : i + 2 + width]
                if len(digits) != width or not all(ch in "0123456789abcdefABCDEF" for ch in digits):
                    raise EvalError(f"invalid escape \\{e}{digits}")
                buf.append(chr(int(digits, 16)))
                i += 2 + width
                continue
            raise EvalError(f"invalid escape sequence \\{e}")
        if src.startswith("$${", i) or src.startswith("%%{", i):
            buf.append(src[i + 1 : i + 3])
            i += 3
            continue
        if src.startswith("%{", i):
            raise Unevaluable("template directives are not supported")
        if src.startswith("${", i):
            if buf:
                parts.append(nfc("".join(buf)))
                buf = []
            node, i = interpolate(src, i + 2)  # a template's ${...} holds an expression
            parts.append(node)
            continue
        if c == "\n":
            raise EvalError("unterminated string")
        buf.append(c)
        i += 1
    raise EvalError("unterminated string")


def tokens(src: str, i: int, interpolate: Interpolate) -> Iterator[Tok]:
    n = len(src)
    while True:
        while i < n:
            c = src[i]
            if c in " \t\r\n":
                i += 1
            elif c == "#" or src.startswith("//", i):
                while i < n and src[i] != "\n":
                    i += 1
            elif src.startswith("/*", i):
                j = src.find("*/", i + 2)
                i = n if j < 0 else j + 2
            else:
                break
        if i >= n:
            yield Tok("eof", None, i)
            return
        c = src[i]
        if c == '"':
            parts, j = read_string(src, i + 1, interpolate)
            yield Tok("str", parts, i)
            i = j
            continue
        if src.startswith("<<", i):
            raise Unevaluable("heredocs are not supported in expressions")
        m = _NUM_RE.match(src, i)
        if m and c.isdigit():
            text = m.group(0)
            value = parse_number(text)
            if isinstance(value, int) and not text.isdigit():
                value = Respelled(value)
            yield Tok("num", value, i)
            i = m.end()
            continue
        m = _IDENT_RE.match(src, i)
        if m:
            yield Tok("ident", m.group(0), i)
            i = m.end()
            continue
        for op in _OPS:
            if src.startswith(op, i):
                yield Tok("op", op, i)
                i += len(op)
                break
        else:
            raise Unevaluable(f"unexpected character {c!r}")
