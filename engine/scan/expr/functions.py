"""The Terraform functions the evaluator knows, by name (:data:`FUNCTIONS`)."""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable
from typing import Any

from .errors import EvalError, Unevaluable
from .values import equal, seq, sort_key, to_bool, to_num, to_str, type_name


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
    raise EvalError(f"cannot take the length of a {type_name(v)}")


def _fn_contains(coll: Any, v: Any) -> bool:
    return any(equal(x, v) for x in seq(coll))


def _fn_alltrue(coll: Any) -> bool:
    return all(to_bool(x) for x in seq(coll))


def _fn_anytrue(coll: Any) -> bool:
    return any(to_bool(x) for x in seq(coll))


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
    n = int(to_num(hostnum))
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
    nb, nn = int(to_num(newbits)), int(to_num(netnum))
    new_len = net.prefixlen + nb
    if new_len > net.max_prefixlen or not 0 <= nn < 2**nb:
        raise EvalError("insufficient address space for the requested subnet")
    size = 2 ** (net.max_prefixlen - new_len)
    base = int(net.network_address) + nn * size
    return str(ipaddress.ip_network((base, new_len)))


def _fn_substr(s: Any, offset: Any, length: Any) -> str:
    (text,) = _str_args("substr", s)
    off, ln = int(to_num(offset)), int(to_num(length))
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
    return seq(v)


def _fn_toset(v: Any) -> list[Any]:
    out: list[Any] = []
    for x in seq(v):
        if not any(equal(x, y) for y in out):
            out.append(x)
    return sorted(out, key=sort_key)


def _fn_distinct(v: Any) -> list[Any]:
    out: list[Any] = []
    for x in seq(v):
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
    return [x for lst in lists for x in seq(lst)]


def _fn_flatten(v: Any) -> list[Any]:
    out: list[Any] = []
    for x in seq(v):
        if isinstance(x, list | tuple | frozenset | set):
            out.extend(_fn_flatten(x))
        else:
            out.append(x)
    return out


def _fn_join(sep: Any, *lists: Any) -> str:
    (s,) = _str_args("join", sep)
    return s.join(to_str(x) for lst in lists for x in seq(lst))


def _fn_tostring(v: Any) -> str | None:
    return None if v is None else to_str(v)


def _fn_tonumber(v: Any) -> int | float | None:
    return None if v is None else to_num(v)


def _fn_tobool(v: Any) -> bool | None:
    return None if v is None else to_bool(v)


def _fn_index(coll: Any, v: Any) -> int:
    for i, x in enumerate(seq(coll)):
        if equal(x, v):
            return i
    raise EvalError("item not found")


def _nums(*vals: Any) -> list[int | float]:
    if not vals:
        raise EvalError("at least one number is required")
    return [to_num(v) for v in vals]


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
    "abs": lambda v: abs(to_num(v)),
    "floor": lambda v: math.floor(to_num(v)),
    "ceil": lambda v: math.ceil(to_num(v)),
}
