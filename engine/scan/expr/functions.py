"""The Terraform functions the evaluator knows, by name (:data:`FUNCTIONS`).

Each follows Terraform's own implementation where it differs from Python's
obvious one (string arguments converted from numbers and bools, lengths in
grapheme clusters, Go's per-rune case mapping, IPv4 octets with leading zeros,
``null`` refused where Terraform refuses it). Where the answer would rest on
something not modelled, a function raises :class:`Unevaluable`.
"""

from __future__ import annotations

import ipaddress
import math
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from .errors import EvalError, Unevaluable
from .re2 import translate
from .values import (
    ListVal,
    LooseDict,
    LooseList,
    MapVal,
    Respelled,
    SetVal,
    equal,
    is_number,
    is_seq,
    make_number,
    nfc,
    seq,
    sort_key,
    to_bool,
    to_num,
    to_str,
    type_name,
)

# ------------------------------------------------------------------- strings


def _str(name: str, v: Any) -> str:
    """An argument of a ``string`` parameter, converted as Terraform converts it."""
    if v is None:
        raise EvalError(f"{name}: argument must not be null")
    if isinstance(v, list | dict):
        raise EvalError(f"{name}: a string is required, got {type_name(v)}")
    return to_str(v)


def _int(name: str, v: Any) -> int:
    if v is None:
        raise EvalError(f"{name}: argument must not be null")
    n = to_num(v)
    if not isinstance(n, int):
        raise Unevaluable(f"{name}: a fractional number where a whole one is used")
    return n


# Characters that may join their neighbours into one grapheme cluster.
_JOINING_CATEGORIES = {"Mn", "Mc", "Me", "Cf", "Cs", "Co", "Cn", "Sk"}
_JOINING_RANGES = (
    (0x1100, 0x11FF),  # Hangul jamo
    (0xA960, 0xA97F),
    (0xD7B0, 0xD7FF),
    (0x1F1E6, 0x1F1FF),  # regional indicators
    (0x1F3FB, 0x1F3FF),  # emoji modifiers
    (0xFE00, 0xFE0F),  # variation selectors
    (0xE0000, 0xE0FFF),
    (0xFF9E, 0xFF9F),
    (0x0E33, 0x0E33),
    (0x0EB3, 0x0EB3),
    (0x0D4E, 0x0D4E),
    (0x110BD, 0x110BD),
    (0x111C2, 0x111C3),
    (0x1193F, 0x11941),
    (0x11A3A, 0x11A3A),
    (0x11A84, 0x11A89),
    (0x11D46, 0x11D46),
)


def graphemes(s: str) -> list[str]:
    """``s`` split into grapheme clusters (after NFC) as Terraform counts them,
    for text where that is certain; :class:`Unevaluable` otherwise."""
    s = nfc(s)
    if not s.isascii():
        for ch in s:
            o = ord(ch)
            if o < 0x80:
                continue
            if unicodedata.category(ch) in _JOINING_CATEGORIES or any(
                lo <= o <= hi for lo, hi in _JOINING_RANGES
            ):
                raise Unevaluable("text with combining characters")
    out: list[str] = []
    i = 0
    while i < len(s):
        if s.startswith("\r\n", i):
            out.append("\r\n")
            i += 2
        else:
            out.append(s[i])
            i += 1
    return out


def _case(name: str, v: Any, upper: bool) -> str:
    s = _str(name, v)
    if s.isascii():
        return s.upper() if upper else s.lower()
    out = []
    for ch in s:
        m = ch.upper() if upper else ch.lower()
        if len(m) != 1:
            raise Unevaluable(f"{name}: a character Go maps differently")
        out.append(m)
    return nfc("".join(out))


_GO_SPACE = set("\t\n\v\f\r \x85\xa0")


def _is_go_space(ch: str) -> bool:
    return ch in _GO_SPACE or (ord(ch) > 0xFF and unicodedata.category(ch) in ("Zs", "Zl", "Zp"))


def _fn_trimspace(v: Any) -> str:
    s = _str("trimspace", v)
    i, j = 0, len(s)
    while i < j and _is_go_space(s[i]):
        i += 1
    while j > i and _is_go_space(s[j - 1]):
        j -= 1
    return s[i:j]


def _fn_length(v: Any) -> int:
    if v is None:
        raise EvalError("length: argument must not be null")
    if isinstance(v, str):
        return len(graphemes(v))
    if isinstance(v, list | dict):
        return len(v)
    raise EvalError(f"cannot take the length of a {type_name(v)}")


def _fn_substr(s: Any, offset: Any, length: Any) -> str:
    clusters = graphemes(_str("substr", s))
    off, ln = _int("substr", offset), _int("substr", length)
    if off < 0:
        off += len(clusters)
    if off < 0 or off > len(clusters) or ln < -1:
        raise Unevaluable("substr: offset or length outside the text")
    part = clusters[off:] if ln == -1 else clusters[off : off + ln]
    return nfc("".join(part))


def _fn_replace(s: Any, old: Any, new: Any) -> str:
    text, o, n = _str("replace", s), _str("replace", old), _str("replace", new)
    if len(o) > 1 and o.startswith("/") and o.endswith("/"):
        raise Unevaluable("regex replace is not supported")
    return nfc(text.replace(o, n))


def _fn_split(sep: Any, s: Any) -> ListVal:
    sp, text = _str("split", sep), _str("split", s)
    return ListVal(text.split(sp) if sp else list(text))


def _fn_join(sep: Any, *lists: Any) -> str:
    s = _str("join", sep)
    if not lists:
        raise EvalError("join: at least one list is required")
    items = []
    for lst in lists:
        for x in _coll("join", lst):
            if x is None:
                raise EvalError("join: null element")
            items.append(_str("join", x))
    return nfc(s.join(items))


# ------------------------------------------------------------------- regexes


def _regex_args(name: str, pattern: Any, s: Any) -> tuple[re.Pattern[str], str]:
    p, text = _str(name, pattern), _str(name, s)
    return translate(p).check(text), text


def _match_value(m: re.Match[str]) -> Any:
    names = m.re.groupindex
    if names and len(names) != m.re.groups:
        raise Unevaluable("named and unnamed groups together")
    if names:
        return LooseDict({name: m.group(name) for name in names})
    if m.re.groups:
        return LooseList(m.groups())
    return m.group(0)


def _fn_regex(pattern: Any, s: Any) -> Any:
    rx, text = _regex_args("regex", pattern, s)
    m = rx.search(text)
    if m is None:
        raise EvalError("pattern did not match any part of the given string")
    return _match_value(m)


def _fn_regexall(pattern: Any, s: Any) -> Any:
    rx, text = _regex_args("regexall", pattern, s)
    return LooseList(_match_value(m) for m in rx.finditer(text))


# --------------------------------------------------------------- collections


def _coll(name: str, v: Any) -> list[Any]:
    if v is None:
        raise EvalError(f"{name}: argument must not be null")
    if not is_seq(v):
        raise EvalError(f"{name}: a list is required, got {type_name(v)}")
    return list(v)


def _unify(items: list[Any]) -> list[Any]:
    """Elements of a tuple as one element type, as ``tolist``/``toset`` do."""
    kinds = {type_name(x) for x in items if x is not None}
    if not kinds:
        if items:
            raise Unevaluable("a collection of only nulls")
        return items
    if len(kinds) == 1:
        kind = next(iter(kinds))
        if kind in ("string", "number", "bool"):
            return items
        raise Unevaluable("a collection of structured values")
    if kinds <= {"string", "number", "bool"} and "string" in kinds:
        return [None if x is None else to_str(x) for x in items]
    if kinds == {"number", "bool"}:
        raise EvalError("elements of inconsistent types")
    raise Unevaluable("a collection of mixed values")


def _set_order(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for x in items:
        if not any(equal(x, y) for y in out):
            out.append(x)
    if any(x is None for x in out):
        raise Unevaluable("a set holding null")
    return sorted(out, key=sort_key)


def _fn_tolist(v: Any) -> Any:
    if v is None:
        return None
    items = _coll("tolist", v)
    if isinstance(v, ListVal):
        return v
    if isinstance(v, SetVal):
        return ListVal(v)
    if isinstance(v, LooseList):
        raise Unevaluable("tolist of a collection whose type is not tracked")
    return ListVal(_unify(items))


def _fn_toset(v: Any) -> Any:
    if v is None:
        return None
    items = _coll("toset", v)
    if isinstance(v, SetVal):
        return v
    if isinstance(v, LooseList):
        raise Unevaluable("toset of a collection whose type is not tracked")
    if not isinstance(v, ListVal):
        items = _unify(items)
    elif any(isinstance(x, list | dict) for x in items):
        raise Unevaluable("a set of structured values")
    return SetVal(_set_order(items))


def _fn_tomap(v: Any) -> Any:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise EvalError(f"tomap: a map is required, got {type_name(v)}")
    if isinstance(v, MapVal):
        return v
    if isinstance(v, LooseDict):
        raise Unevaluable("tomap of a collection whose type is not tracked")
    keys = list(v)
    return MapVal(zip(keys, _unify([v[k] for k in keys]), strict=True))


def _fn_contains(coll: Any, v: Any) -> bool:
    if v is None:
        raise EvalError("contains: the value must not be null")
    items = _coll("contains", coll)
    unsure: Unevaluable | None = None
    for x in items:
        try:
            if equal(x, v):
                return True
        except Unevaluable as e:
            unsure = e
    if unsure is not None:
        raise unsure
    return False


def _fn_index(coll: Any, v: Any) -> int:
    items = _coll("index", coll)
    if isinstance(coll, SetVal | LooseList):
        raise Unevaluable("index of a set or an untracked collection")
    if v is None:
        raise Unevaluable("index of null")
    for i, x in enumerate(items):
        if equal(x, v):
            return i
    raise EvalError("item not found")


def _bools(name: str, coll: Any) -> list[bool]:
    out = []
    for x in _coll(name, coll):
        if x is None:
            raise Unevaluable(f"{name}: a null element")
        out.append(to_bool(x))
    return out


def _fn_alltrue(coll: Any) -> bool:
    return all(_bools("alltrue", coll))


def _fn_anytrue(coll: Any) -> bool:
    return any(_bools("anytrue", coll))


def _fn_distinct(v: Any) -> Any:
    out: list[Any] = []
    for x in _coll("distinct", v):
        if not any(equal(x, y) for y in out):
            out.append(x)
    return LooseList(out)


def _fn_keys(m: Any) -> Any:
    if not isinstance(m, dict):
        raise EvalError("keys needs a map or object")
    ks = sorted(m)
    return ListVal(ks) if isinstance(m, MapVal) else LooseList(ks)


def _fn_values(m: Any) -> Any:
    if not isinstance(m, dict):
        raise EvalError("values needs a map or object")
    return LooseList(m[k] for k in sorted(m))


def _fn_concat(*lists: Any) -> Any:
    return LooseList(x for lst in lists for x in _coll("concat", lst))


def _fn_flatten(v: Any) -> Any:
    out: list[Any] = []
    for x in _coll("flatten", v):
        if isinstance(x, list):
            out.extend(_fn_flatten(x))
        else:
            out.append(x)
    return LooseList(out)


def _fn_lookup(m: Any, key: Any, *default: Any) -> Any:
    if not isinstance(m, dict):
        raise EvalError("lookup needs a map")
    if len(default) > 1:
        raise Unevaluable("lookup takes at most three arguments")
    k = _str("lookup", key)
    if k in m:
        if default and not all(type_name(v) == type_name(default[0]) for v in m.values()):
            raise Unevaluable("lookup whose default has another type")
        return m[k]
    if default:
        if any(type_name(v) != type_name(default[0]) for v in m.values()):
            raise Unevaluable("lookup whose default has another type")
        return default[0]
    raise EvalError(f"the given key {k!r} does not exist in the map")


def _fn_coalesce(*vals: Any) -> Any:
    kinds = {type_name(v) for v in vals if v is not None}
    if len(kinds) > 1 or not kinds <= {"string", "number", "bool"}:
        raise Unevaluable("coalesce of values of different types")
    for v in vals:
        if v is not None and v != "":
            return v
    raise EvalError("no non-null, non-empty-string arguments")


# ------------------------------------------------------------------- numbers


def _nums(name: str, *vals: Any) -> list[Any]:
    if not vals:
        raise EvalError(f"{name}: at least one number is required")
    if any(v is None for v in vals):
        raise EvalError(f"{name}: argument must not be null")
    return [to_num(v) for v in vals]


def _num1(name: str, v: Any) -> Any:
    return _nums(name, v)[0]


def _fn_tostring(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, list | dict):
        raise EvalError(f"cannot convert a {type_name(v)} to a string")
    return to_str(v)


def _fn_tonumber(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, list | dict):
        raise EvalError(f"cannot convert a {type_name(v)} to a number")
    return to_num(v)


def _fn_tobool(v: Any) -> bool | None:
    if v is None:
        return None
    return to_bool(v)


# ---------------------------------------------------------------- addresses


def _ipv4(text: str) -> int:
    """An IPv4 address as Terraform's parser reads it: four decimal octets,
    leading zeros allowed (``010`` is ten)."""
    parts = text.split(".")
    if len(parts) != 4 or not all(p.isascii() and p.isdigit() for p in parts):
        raise EvalError(f"invalid IP address {text!r}")
    if any(len(p) > 3 for p in parts):
        raise Unevaluable("an IPv4 octet written with more than three digits")
    octets = [int(p) for p in parts]
    if any(o > 255 for o in octets):
        raise EvalError(f"invalid IP address {text!r}")
    return int.from_bytes(bytes(octets), "big")


def _fn_cidr(prefix: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    text = _str("cidr", prefix)
    addr, slash, bits = text.partition("/")
    if not slash or not bits.isascii() or not bits.isdigit() or len(bits) > 3:
        raise EvalError(f"invalid CIDR prefix {text!r}")
    plen = int(bits)
    if ":" in addr:
        if "." in addr or "%" in addr:
            raise Unevaluable("IPv6 prefix with an embedded IPv4 address or zone")
        try:
            net6 = ipaddress.IPv6Network(f"{addr}/{plen}", strict=False)
        except ValueError as e:
            raise EvalError(f"invalid CIDR prefix {text!r}: {e}") from None
        if net6.network_address in ipaddress.IPv6Network("::ffff:0:0/96"):
            raise Unevaluable("IPv4-mapped IPv6 prefix")
        return net6
    if plen > 32:
        raise EvalError(f"invalid CIDR prefix {text!r}")
    value = _ipv4(addr)
    return ipaddress.IPv4Network((value, plen), strict=False)


def _fn_cidrhost(prefix: Any, hostnum: Any) -> str:
    net = _fn_cidr(prefix)
    n = _int("cidrhost", hostnum)
    if n < 0:
        raise Unevaluable("cidrhost with a negative host number")
    if n >= net.num_addresses:
        raise EvalError(f"prefix of {net.prefixlen} bits cannot accommodate a host numbered {n}")
    return str(net.network_address + n)


def _fn_cidrnetmask(prefix: Any) -> str:
    net = _fn_cidr(prefix)
    if net.version != 4:
        raise Unevaluable("netmask of an IPv6 prefix")
    return str(net.netmask)


def _fn_cidrsubnet(prefix: Any, newbits: Any, netnum: Any) -> str:
    net = _fn_cidr(prefix)
    nb, nn = _int("cidrsubnet", newbits), _int("cidrsubnet", netnum)
    if nb < 0 or nn < 0:
        raise Unevaluable("cidrsubnet with negative numbers")
    new_len = net.prefixlen + nb
    if new_len > net.max_prefixlen or nn >= 2**nb:
        raise EvalError("insufficient address space for the requested subnet")
    size = 2 ** (net.max_prefixlen - new_len)
    base = int(net.network_address) + nn * size
    return str(ipaddress.ip_network((base, new_len)))


def _fn_sum(coll: Any) -> Any:
    items = _coll("sum", coll)
    if not items:
        raise EvalError("sum: cannot sum an empty list")
    if not all(is_number(x) for x in items):
        raise Unevaluable("sum of values that are not all numbers")
    from .evaluator import add

    total = items[0]
    for x in items[1:]:
        total = add(total, x)
    return total


def _fn_compact(coll: Any) -> Any:
    items = _coll("compact", coll)
    if not all(x is None or isinstance(x, str) for x in items):
        raise Unevaluable("compact of values that are not all strings")
    return ListVal(x for x in items if x)


def _fn_element(coll: Any, index: Any) -> Any:
    if isinstance(coll, SetVal | LooseList):
        raise Unevaluable("element of a set or an untracked collection")
    items = _coll("element", coll)
    i = _int("element", index)
    if not items:
        raise EvalError("element: cannot use element function with an empty list")
    if i < 0:
        raise Unevaluable("element with a negative index")
    return items[i % len(items)]


def _fn_one(coll: Any) -> Any:
    items = _coll("one", coll)
    if len(items) > 1:
        raise EvalError("one: must be a list, set, or tuple value with either zero or one elements")
    return items[0] if items else None


def _fn_merge(*maps: Any) -> Any:
    out: dict[str, Any] = {}
    for m in maps:
        if m is None:
            continue
        if not isinstance(m, dict):
            raise Unevaluable("merge of a value that is not a map or object")
        out.update(m)
    return LooseDict(out)


def _fn_reverse(coll: Any) -> Any:
    if isinstance(coll, SetVal | LooseList):
        raise Unevaluable("reverse of a set or an untracked collection")
    return LooseList(reversed(_coll("reverse", coll)))


def _fn_sort(coll: Any) -> Any:
    items = _coll("sort", coll)
    if not all(isinstance(x, str) for x in items):
        raise Unevaluable("sort of values that are not all strings")
    return ListVal(sorted(items))


def _fn_trim(s: Any, cutset: Any) -> str:
    return _str("trim", s).strip(_str("trim", cutset))


def _rounded(name: str, v: Any, fn: Callable[[Any], int]) -> Any:
    n = _num1(name, v)
    if isinstance(n, Respelled):
        raise Unevaluable(f"{name} of a whole number written as a decimal")
    return make_number(fn(n))


def _text_fn(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return fn(*[_str(name, a) for a in args])

    return call


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "regex": _fn_regex,
    "regexall": _fn_regexall,
    "length": _fn_length,
    "contains": _fn_contains,
    "alltrue": _fn_alltrue,
    "anytrue": _fn_anytrue,
    "startswith": _text_fn("startswith", lambda s, p: s.startswith(p)),
    "endswith": _text_fn("endswith", lambda s, p: s.endswith(p)),
    "strcontains": _text_fn("strcontains", lambda s, p: p in s),
    "lower": lambda s: _case("lower", s, upper=False),
    "upper": lambda s: _case("upper", s, upper=True),
    "trimspace": _fn_trimspace,
    "trimprefix": _text_fn("trimprefix", str.removeprefix),
    "trimsuffix": _text_fn("trimsuffix", str.removesuffix),
    "split": _fn_split,
    "join": _fn_join,
    "substr": _fn_substr,
    "replace": _fn_replace,
    "tostring": _fn_tostring,
    "tonumber": _fn_tonumber,
    "tobool": _fn_tobool,
    "tolist": _fn_tolist,
    "toset": _fn_toset,
    "tomap": _fn_tomap,
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
    "sum": _fn_sum,
    "compact": _fn_compact,
    "element": _fn_element,
    "one": _fn_one,
    "merge": _fn_merge,
    "reverse": _fn_reverse,
    "sort": _fn_sort,
    "trim": _fn_trim,
    "min": lambda *v: min(_nums("min", *v)),
    "max": lambda *v: max(_nums("max", *v)),
    "abs": lambda v: abs(_num1("abs", v)),
    "floor": lambda v: _rounded("floor", v, math.floor),
    "ceil": lambda v: _rounded("ceil", v, math.ceil),
}

__all__ = ["FUNCTIONS", "graphemes", "is_number", "seq"]
