"""A small evaluator for the HCL expressions variable ``validation`` blocks use.

It covers literals, ``var.*`` references, operators, conditionals, ``for``
expressions, string templates and the functions listed in :data:`FUNCTIONS`.
Anything else raises :class:`Unevaluable`: the condition is then left for
``terraform plan`` to judge, never guessed.

Two failures are kept apart on purpose:

* :class:`EvalError` — the expression is understood and fails the way Terraform
  would fail it (``regex`` without a match, ``tonumber("x")``). ``can()`` and
  ``try()`` turn it into a value, exactly as in Terraform.
* :class:`Unevaluable` — this evaluator does not know enough. It passes through
  ``can()`` and ``try()`` untouched.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


class Unevaluable(Exception):
    """The expression uses something this evaluator does not implement."""


class EvalError(Exception):
    """The expression fails the way Terraform would fail it."""


# --------------------------------------------------------------------------- lexer


@dataclass(frozen=True)
class Tok:
    kind: str  # num, str, ident, op, eof
    value: Any
    pos: int


_OPS: tuple[str, ...] = ("...", "==", "!=", "<=", ">=", "&&", "||", "=>", *"<>!+-*/%?:()[]{},.=")
_NUM_RE = re.compile(r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def _read_string(src: str, i: int) -> tuple[list[str | Any], int]:
    """Read a quoted template starting after the opening quote.

    Returns its parts (literal text, or a parsed expression node for ``${...}``)
    and the index after the closing quote."""
    parts: list[str | Any] = []
    buf: list[str] = []
    n = len(src)
    while i < n:
        c = src[i]
        if c == '"':
            if buf:
                parts.append("".join(buf))
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
                parts.append("".join(buf))
                buf = []
            parser = _Parser(src, i + 2)
            node = parser.expr()
            end = parser.expect("}")
            parts.append(node)
            i = end
            continue
        if c == "\n":
            raise EvalError("unterminated string")
        buf.append(c)
        i += 1
    raise EvalError("unterminated string")


def _tokens(src: str, i: int) -> Iterator[Tok]:
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
            parts, j = _read_string(src, i + 1)
            yield Tok("str", parts, i)
            i = j
            continue
        if src.startswith("<<", i):
            raise Unevaluable("heredocs are not supported in expressions")
        m = _NUM_RE.match(src, i)
        if m and c.isdigit():
            text = m.group(0)
            yield Tok("num", _number(text), i)
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


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        f = float(text)
        return int(f) if f.is_integer() and abs(f) < 2**53 else f


# -------------------------------------------------------------------------- parser
# Nodes are tuples: ("lit", v), ("tmpl", parts), ("ref", name), ("attr", obj, name),
# ("index", obj, key), ("splat", obj), ("call", name, args, expand), ("list", items),
# ("obj", pairs), ("unop", op, x), ("binop", op, a, b), ("cond", c, a, b),
# ("for_list", k, v, coll, body, cond), ("for_obj", k, v, coll, kexpr, vexpr, group, cond).

_BINARY_LEVELS: tuple[tuple[str, ...], ...] = (
    ("||",),
    ("&&",),
    ("==", "!="),
    ("<", ">", "<=", ">="),
    ("+", "-"),
    ("*", "/", "%"),
)


class _Parser:
    def __init__(self, src: str, start: int = 0) -> None:
        self.src = src
        self._it = _tokens(src, start)
        self._tok: Tok | None = None

    @property
    def tok(self) -> Tok:
        # Lexed lazily: a template's "${...}" must not read past its closing brace.
        if self._tok is None:
            self._tok = next(self._it)
        return self._tok

    def advance(self) -> Tok:
        t = self.tok
        if t.kind != "eof":
            self._tok = None
        return t

    def at(self, value: str) -> bool:
        return self.tok.kind == "op" and self.tok.value == value

    def at_kw(self, word: str) -> bool:
        return self.tok.kind == "ident" and self.tok.value == word

    def expect(self, value: str) -> int:
        if not self.at(value):
            raise Unevaluable(f"expected {value!r} at offset {self.tok.pos}")
        t = self.advance()
        return t.pos + len(value)

    def expect_ident(self) -> str:
        if self.tok.kind != "ident":
            raise Unevaluable(f"expected a name at offset {self.tok.pos}")
        return str(self.advance().value)

    # expression grammar ---------------------------------------------------
    def expr(self) -> Any:
        c = self.binary(0)
        if self.at("?"):
            self.advance()
            a = self.expr()
            self.expect(":")
            b = self.expr()
            return ("cond", c, a, b)
        return c

    def binary(self, level: int) -> Any:
        if level == len(_BINARY_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.tok.kind == "op" and self.tok.value in _BINARY_LEVELS[level]:
            op = self.advance().value
            right = self.binary(level + 1)
            left = ("binop", op, left, right)
        return left

    def unary(self) -> Any:
        if self.at("!") or self.at("-"):
            op = self.advance().value
            return ("unop", op, self.unary())
        return self.postfix(self.primary())

    def postfix(self, node: Any) -> Any:
        while True:
            if self.at("."):
                self.advance()
                if self.at("*"):
                    self.advance()
                    node = ("splat", node)
                elif self.tok.kind == "num":
                    node = ("index", node, ("lit", self.advance().value))
                else:
                    node = ("attr", node, self.expect_ident())
            elif self.at("["):
                self.advance()
                if self.at("*"):
                    self.advance()
                    self.expect("]")
                    node = ("splat", node)
                else:
                    key = self.expr()
                    self.expect("]")
                    node = ("index", node, key)
            else:
                return node

    def primary(self) -> Any:
        t = self.tok
        if t.kind == "num":
            self.advance()
            return ("lit", t.value)
        if t.kind == "str":
            self.advance()
            parts = t.value
            if all(isinstance(p, str) for p in parts):
                return ("lit", "".join(parts))
            return ("tmpl", parts)
        if t.kind == "ident":
            self.advance()
            name = t.value
            if name == "true":
                return ("lit", True)
            if name == "false":
                return ("lit", False)
            if name == "null":
                return ("lit", None)
            if self.at("("):
                return self.call(name)
            return ("ref", name)
        if self.at("("):
            self.advance()
            e = self.expr()
            self.expect(")")
            return e
        if self.at("["):
            self.advance()
            if self.at_kw("for"):
                return self.for_expr("]")
            items = []
            while not self.at("]"):
                items.append(self.expr())
                if not self.at(","):
                    break
                self.advance()
            self.expect("]")
            return ("list", items)
        if self.at("{"):
            self.advance()
            if self.at_kw("for"):
                return self.for_expr("}")
            pairs = []
            while not self.at("}"):
                k = self.expr()
                if not (self.at("=") or self.at(":")):
                    raise Unevaluable("expected = or : in an object")
                self.advance()
                v = self.expr()
                if k[0] == "ref":
                    k = ("lit", k[1])
                pairs.append((k, v))
                if self.at(","):
                    self.advance()
            self.expect("}")
            return ("obj", pairs)
        raise Unevaluable(f"unexpected token {t.value!r} at offset {t.pos}")

    def call(self, name: str) -> Any:
        self.expect("(")
        args = []
        expand = False
        while not self.at(")"):
            args.append(self.expr())
            if self.at("..."):
                self.advance()
                expand = True
            if not self.at(","):
                break
            self.advance()
        self.expect(")")
        return ("call", name, args, expand)

    def for_expr(self, close: str) -> Any:
        self.advance()  # "for"
        first = self.expect_ident()
        second = None
        if self.at(","):
            self.advance()
            second = self.expect_ident()
        if not self.at_kw("in"):
            raise Unevaluable("expected 'in' in a for expression")
        self.advance()
        coll = self.expr()
        self.expect(":")
        key_name, val_name = (first, second) if second else (None, first)
        if close == "]":
            body = self.expr()
            cond = self._for_if()
            self.expect("]")
            return ("for_list", key_name, val_name, coll, body, cond)
        kexpr = self.expr()
        self.expect("=>")
        vexpr = self.expr()
        group = False
        if self.at("..."):
            self.advance()
            group = True
        cond = self._for_if()
        self.expect("}")
        return ("for_obj", key_name, val_name, coll, kexpr, vexpr, group, cond)

    def _for_if(self) -> Any:
        if self.at_kw("if"):
            self.advance()
            return self.expr()
        return None


def parse(src: str) -> Any:
    """Parse one expression (the whole of ``src``)."""
    p = _Parser(src)
    node = p.expr()
    if p.tok.kind != "eof":
        raise Unevaluable(f"unexpected {p.tok.value!r} at offset {p.tok.pos}")
    return node


def parse_template(src: str) -> Any:
    """Parse the inside of a quoted string (without its quotes) as a template."""
    parts, end = _read_string(src + '"', 0)
    if end != len(src) + 1:
        raise EvalError("unescaped quote in string")
    return ("tmpl", parts)


# ----------------------------------------------------------------------- evaluation


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list | tuple):
        return "list"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, frozenset | set):
        return "set"
    return type(v).__name__


def _to_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, str):
        return v
    if v is None:
        raise EvalError("cannot use a null value in a string")
    raise EvalError(f"cannot convert a {_type_name(v)} to a string")


def _to_num(v: Any) -> int | float:
    if isinstance(v, bool) or v is None:
        raise EvalError(f"a number is required, got {_type_name(v)}")
    if isinstance(v, int | float):
        return v
    if isinstance(v, str):
        s = v.strip()
        if s != v or not re.fullmatch(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?", s):
            raise EvalError(f"cannot convert {v!r} to a number")
        return _number(s.lstrip("-")) * (-1 if s.startswith("-") else 1)
    raise EvalError(f"a number is required, got {_type_name(v)}")


def _to_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if v == "true":
        return True
    if v == "false":
        return False
    raise EvalError(f"a bool is required, got {_type_name(v)}")


def _seq(v: Any) -> list[Any]:
    if isinstance(v, list | tuple):
        return list(v)
    if isinstance(v, frozenset | set):
        return sorted(v, key=_sort_key)
    raise EvalError(f"a list is required, got {_type_name(v)}")


def _sort_key(v: Any) -> tuple[int, Any]:
    if isinstance(v, str):
        return (1, v)
    if isinstance(v, bool):
        return (0, int(v))
    if isinstance(v, int | float):
        return (0, v)
    return (2, repr(v))


def equal(a: Any, b: Any) -> bool:
    """HCL equality: values of different types are never equal."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if type(a) is not type(b) and not (a is None or b is None):
        return False
    return bool(a == b)


def _from_re2(pattern: str) -> str:
    """Terraform's RE2 syntax as Python's, where they differ in meaning.

    RE2's ``$`` (without the ``m`` flag) matches only at the very end, Python's
    also before a final newline; ``\\z`` is Python's ``\\Z``. POSIX classes
    (``[[:alpha:]]``) mean something else to Python, so they are not guessed."""
    if "[:" in pattern:
        raise Unevaluable("POSIX character classes are not supported")
    multiline = re.search(r"\(\?[a-zA-Z]*m[a-zA-Z]*[):]", pattern) is not None
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            out.append("\\Z" if nxt == "z" else c + nxt)
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern.startswith("[^]", i) or pattern.startswith("[]", i):
                out.append(pattern[i : i + (3 if pattern[i + 1] == "^" else 2)])
                i += 3 if pattern[i + 1] == "^" else 2
                continue
        elif c == "$" and not multiline:
            out.append("\\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _regex(pattern: Any, s: Any) -> re.Pattern[str]:
    if not isinstance(pattern, str) or not isinstance(s, str):
        raise EvalError("regex needs a string pattern and a string")
    try:
        return re.compile(_from_re2(pattern))
    except re.error as e:
        raise Unevaluable(f"pattern {pattern!r} is not understood: {e}") from None


def _match_value(m: re.Match[str]) -> Any:
    if m.re.groupindex:
        return {name: m.group(name) for name in m.re.groupindex}
    if m.re.groups:
        return list(m.groups())
    return m.group(0)


def _fn_regex(pattern: Any, s: Any) -> Any:
    m = _regex(pattern, s).search(s)
    if m is None:
        raise EvalError("pattern did not match any part of the given string")
    return _match_value(m)


def _fn_regexall(pattern: Any, s: Any) -> Any:
    return [_match_value(m) for m in _regex(pattern, s).finditer(s)]


def _fn_length(v: Any) -> int:
    if v is None:
        raise EvalError("argument must not be null")
    if isinstance(v, str | list | tuple | dict | frozenset | set):
        return len(v)
    raise EvalError(f"cannot take the length of a {_type_name(v)}")


def _fn_contains(coll: Any, v: Any) -> bool:
    return any(equal(x, v) for x in _seq(coll))


def _fn_alltrue(coll: Any) -> bool:
    return all(_to_bool(x) for x in _seq(coll))


def _fn_anytrue(coll: Any) -> bool:
    return any(_to_bool(x) for x in _seq(coll))


def _str_args(name: str, *vals: Any) -> list[str]:
    if not all(isinstance(v, str) for v in vals):
        raise EvalError(f"{name} needs string arguments")
    return list(vals)


def _fn_cidr(prefix: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    if not isinstance(prefix, str):
        raise EvalError("a CIDR prefix must be a string")
    try:
        return ipaddress.ip_network(prefix, strict=False)
    except ValueError as e:
        raise EvalError(f"invalid CIDR prefix {prefix!r}: {e}") from None


def _fn_cidrhost(prefix: Any, hostnum: Any) -> str:
    net = _fn_cidr(prefix)
    n = int(_to_num(hostnum))
    size = net.num_addresses
    if n < 0:
        n += size
    if not 0 <= n < size:
        raise EvalError(f"prefix of {net.prefixlen} bits cannot accommodate a host numbered {n}")
    return str(net.network_address + n)


def _fn_cidrnetmask(prefix: Any) -> str:
    net = _fn_cidr(prefix)
    if net.version != 4:
        raise EvalError("only IPv4 networks have a netmask")
    return str(net.netmask)


def _fn_cidrsubnet(prefix: Any, newbits: Any, netnum: Any) -> str:
    net = _fn_cidr(prefix)
    nb, nn = int(_to_num(newbits)), int(_to_num(netnum))
    new_len = net.prefixlen + nb
    if new_len > net.max_prefixlen or not 0 <= nn < 2**nb:
        raise EvalError("insufficient address space for the requested subnet")
    size = 2 ** (net.max_prefixlen - new_len)
    base = int(net.network_address) + nn * size
    return str(ipaddress.ip_network((base, new_len)))


def _fn_substr(s: Any, offset: Any, length: Any) -> str:
    (text,) = _str_args("substr", s)
    off, ln = int(_to_num(offset)), int(_to_num(length))
    if off < 0:
        off += len(text)
    if off < 0 or off > len(text):
        raise EvalError("offset out of range")
    return text[off:] if ln < 0 else text[off : off + ln]


def _fn_replace(s: Any, old: Any, new: Any) -> str:
    text, o, n = _str_args("replace", s, old, new)
    if len(o) > 1 and o.startswith("/") and o.endswith("/"):
        raise Unevaluable("regex replace is not supported")
    return text.replace(o, n)


def _fn_lookup(m: Any, key: Any, *default: Any) -> Any:
    if not isinstance(m, dict):
        raise EvalError("lookup needs a map")
    if key in m:
        return m[key]
    if default:
        return default[0]
    raise EvalError(f"the given key {key!r} does not exist in the map")


def _fn_coalesce(*vals: Any) -> Any:
    for v in vals:
        if v is not None and v != "":
            return v
    raise EvalError("no non-null, non-empty-string arguments")


def _fn_tolist(v: Any) -> list[Any]:
    return _seq(v)


def _fn_toset(v: Any) -> list[Any]:
    out: list[Any] = []
    for x in _seq(v):
        if not any(equal(x, y) for y in out):
            out.append(x)
    return sorted(out, key=_sort_key)


def _fn_distinct(v: Any) -> list[Any]:
    out: list[Any] = []
    for x in _seq(v):
        if not any(equal(x, y) for y in out):
            out.append(x)
    return out


def _fn_keys(m: Any) -> list[str]:
    if not isinstance(m, dict):
        raise EvalError("keys needs a map or object")
    return sorted(m)


def _fn_values(m: Any) -> list[Any]:
    if not isinstance(m, dict):
        raise EvalError("values needs a map or object")
    return [m[k] for k in sorted(m)]


def _fn_concat(*lists: Any) -> list[Any]:
    return [x for lst in lists for x in _seq(lst)]


def _fn_flatten(v: Any) -> list[Any]:
    out: list[Any] = []
    for x in _seq(v):
        if isinstance(x, list | tuple | frozenset | set):
            out.extend(_fn_flatten(x))
        else:
            out.append(x)
    return out


def _fn_join(sep: Any, *lists: Any) -> str:
    (s,) = _str_args("join", sep)
    return s.join(_to_str(x) for lst in lists for x in _seq(lst))


def _fn_tostring(v: Any) -> str | None:
    return None if v is None else _to_str(v)


def _fn_tonumber(v: Any) -> int | float | None:
    return None if v is None else _to_num(v)


def _fn_tobool(v: Any) -> bool | None:
    return None if v is None else _to_bool(v)


def _fn_index(coll: Any, v: Any) -> int:
    for i, x in enumerate(_seq(coll)):
        if equal(x, v):
            return i
    raise EvalError("item not found")


def _nums(*vals: Any) -> list[int | float]:
    if not vals:
        raise EvalError("at least one number is required")
    return [_to_num(v) for v in vals]


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "regex": _fn_regex,
    "regexall": _fn_regexall,
    "length": _fn_length,
    "contains": _fn_contains,
    "alltrue": _fn_alltrue,
    "anytrue": _fn_anytrue,
    "startswith": lambda s, p: _str_args("startswith", s, p)[0].startswith(p),
    "endswith": lambda s, p: _str_args("endswith", s, p)[0].endswith(p),
    "strcontains": lambda s, p: p in _str_args("strcontains", s, p)[0],
    "lower": lambda s: _str_args("lower", s)[0].lower(),
    "upper": lambda s: _str_args("upper", s)[0].upper(),
    "trimspace": lambda s: _str_args("trimspace", s)[0].strip(),
    "trimprefix": lambda s, p: str.removeprefix(*_str_args("trimprefix", s, p)),
    "trimsuffix": lambda s, p: str.removesuffix(*_str_args("trimsuffix", s, p)),
    "split": lambda sep, s: _str_args("split", s, sep)[0].split(sep) if sep else list(s),
    "join": _fn_join,
    "substr": _fn_substr,
    "replace": _fn_replace,
    "tostring": _fn_tostring,
    "tonumber": _fn_tonumber,
    "tobool": _fn_tobool,
    "tolist": _fn_tolist,
    "toset": _fn_toset,
    "distinct": _fn_distinct,
    "keys": _fn_keys,
    "values": _fn_values,
    "lookup": _fn_lookup,
    "coalesce": _fn_coalesce,
    "concat": _fn_concat,
    "flatten": _fn_flatten,
    "index": _fn_index,
    "cidrhost": _fn_cidrhost,
    "cidrnetmask": _fn_cidrnetmask,
    "cidrsubnet": _fn_cidrsubnet,
    "min": lambda *v: min(_nums(*v)),
    "max": lambda *v: max(_nums(*v)),
    "abs": lambda v: abs(_to_num(v)),
    "floor": lambda v: math.floor(_to_num(v)),
    "ceil": lambda v: math.ceil(_to_num(v)),
}


class Evaluator:
    """Evaluates parsed nodes against ``scope`` (e.g. ``{"var": {...}}``)."""

    def __init__(self, scope: dict[str, Any]) -> None:
        self.scope = scope

    def run(self, node: Any) -> Any:
        """:meth:`eval`, where any failure that is not a Terraform-like
        :class:`EvalError` counts as :class:`Unevaluable` (left for plan)."""
        try:
            return self.eval(node)
        except (EvalError, Unevaluable):
            raise
        except RecursionError:
            raise Unevaluable("expression is too deep") from None
        except Exception as e:
            raise Unevaluable(f"cannot evaluate: {e}") from None

    def eval(self, node: Any, local: dict[str, Any] | None = None) -> Any:
        local = local or {}
        kind = node[0]
        if kind == "lit":
            return node[1]
        if kind == "tmpl":
            text = [p if isinstance(p, str) else _to_str(self.eval(p, local)) for p in node[1]]
            return "".join(text)
        if kind == "ref":
            name = node[1]
            if name in local:
                return local[name]
            if name in self.scope:
                return self.scope[name]
            raise Unevaluable(f"unknown reference {name!r}")
        if kind == "attr":
            obj = self.eval(node[1], local)
            if not isinstance(obj, dict):
                raise EvalError(f"cannot read attribute {node[2]!r} of a {_type_name(obj)}")
            if node[2] not in obj:
                if obj is self.scope.get("var"):
                    raise Unevaluable(f"var.{node[2]} is not known here")
                raise EvalError(f"no attribute {node[2]!r}")
            return obj[node[2]]
        if kind == "index":
            obj = self.eval(node[1], local)
            key = self.eval(node[2], local)
            if isinstance(obj, dict):
                k = _to_str(key)
                if k not in obj:
                    raise EvalError(f"no element {k!r}")
                return obj[k]
            seq = _seq(obj)
            i = _to_num(key)
            if not isinstance(i, int) or not 0 <= i < len(seq):
                raise EvalError(f"index {key!r} out of range")
            return seq[i]
        if kind == "splat":
            raise Unevaluable("splat expressions are not supported")
        if kind == "call":
            return self._call(node, local)
        if kind == "list":
            return [self.eval(x, local) for x in node[1]]
        if kind == "obj":
            return {_to_str(self.eval(k, local)): self.eval(v, local) for k, v in node[1]}
        if kind == "unop":
            v = self.eval(node[2], local)
            return (not _to_bool(v)) if node[1] == "!" else -_to_num(v)
        if kind == "binop":
            return self._binop(node, local)
        if kind == "cond":
            c = _to_bool(self.eval(node[1], local))
            return self.eval(node[2] if c else node[3], local)
        if kind == "for_list":
            _, kn, vn, coll, body, cond = node
            return [self.eval(body, scope) for scope in self._for_scopes(kn, vn, coll, cond, local)]
        if kind == "for_obj":
            _, kn, vn, coll, kexpr, vexpr, group, cond = node
            out: dict[str, Any] = {}
            for scope in self._for_scopes(kn, vn, coll, cond, local):
                k = _to_str(self.eval(kexpr, scope))
                v = self.eval(vexpr, scope)
                if group:
                    out.setdefault(k, []).append(v)
                elif k in out:
                    raise EvalError(f"duplicate object key {k!r}")
                else:
                    out[k] = v
            return out
        raise Unevaluable(f"unsupported expression {kind}")

    def _for_scopes(
        self, kn: str | None, vn: str, coll_node: Any, cond: Any, local: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        coll = self.eval(coll_node, local)
        if isinstance(coll, dict):
            items: list[tuple[Any, Any]] = [(k, coll[k]) for k in sorted(coll)]
        else:
            items = list(enumerate(_seq(coll)))
        for k, v in items:
            scope = {**local, vn: v}
            if kn:
                scope[kn] = k
            if cond is None or _to_bool(self.eval(cond, scope)):
                yield scope

    def _binop(self, node: Any, local: dict[str, Any]) -> Any:
        _, op, a_node, b_node = node
        a = self.eval(a_node, local)
        if op == "&&":
            return _to_bool(a) and _to_bool(self.eval(b_node, local))
        if op == "||":
            return _to_bool(a) or _to_bool(self.eval(b_node, local))
        b = self.eval(b_node, local)
        if op == "==":
            return equal(a, b)
        if op == "!=":
            return not equal(a, b)
        x, y = _to_num(a), _to_num(b)
        if op == "<":
            return x < y
        if op == ">":
            return x > y
        if op == "<=":
            return x <= y
        if op == ">=":
            return x >= y
        if op == "+":
            return x + y
        if op == "-":
            return x - y
        if op == "*":
            return x * y
        if y == 0 and op in "/%":
            raise EvalError("division by zero")
        if op == "/":
            q = x / y
            return int(q) if q.is_integer() else q
        return (
            math.fmod(x, y)
            if isinstance(x, float) or isinstance(y, float)
            else int(math.fmod(x, y))
        )

    def _call(self, node: Any, local: dict[str, Any]) -> Any:
        _, name, arg_nodes, expand = node
        if name == "can":
            if len(arg_nodes) != 1:
                raise EvalError("can takes one argument")
            try:
                self.eval(arg_nodes[0], local)
            except EvalError:
                return False
            return True
        if name == "try":
            last: EvalError | None = None
            for a in arg_nodes:
                try:
                    return self.eval(a, local)
                except EvalError as e:
                    last = e
            raise last or EvalError("try needs at least one argument")
        fn = FUNCTIONS.get(name)
        if fn is None:
            raise Unevaluable(f"function {name!r} is not supported")
        args = [self.eval(a, local) for a in arg_nodes]
        if expand and args:
            args = args[:-1] + _seq(args[-1])
        try:
            return fn(*args)
        except TypeError as e:
            raise EvalError(f"{name}: {e}") from None


def evaluate(node_or_src: Any, scope: dict[str, Any] | None = None) -> Any:
    """Evaluate an expression (source text or a parsed node) in ``scope``."""
    try:
        node = parse(node_or_src) if isinstance(node_or_src, str) else node_or_src
    except RecursionError:
        raise Unevaluable("expression is too deep") from None
    return Evaluator(scope or {}).run(node)


__all__ = [
    "FUNCTIONS",
    "EvalError",
    "Evaluator",
    "Unevaluable",
    "equal",
    "evaluate",
    "parse",
    "parse_template",
]
