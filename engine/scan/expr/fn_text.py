"""String and regex functions: lengths in grapheme clusters after NFC, Go's
per-rune case mapping and whitespace, RE2 regexes (see :mod:`.re2`)."""

from __future__ import annotations

import unicodedata
from typing import Any

from .errors import EvalError, Unevaluable
from .fn_args import coll_arg, int_arg, str_arg
from .re2 import compiled
from .values import (
    ListVal,
    LooseDict,
    LooseList,
    nfc,
    type_name,
)

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


# Characters whose uppercase is several characters in Python but that have no
# single-rune uppercase, so Go's strings.ToUpper keeps them (ß stays ß).
_NO_SIMPLE_UPPER = frozenset(
    "\u00df\u0149\u01f0\u0390\u03b0\u0587\u1e96\u1e97\u1e98\u1e99\u1e9a"
    "\u1f50\u1f52\u1f54\u1f56\u1fb6\u1fc6\u1fd2\u1fd3\u1fd6\u1fd7\u1fe2\u1fe3"
    "\u1fe4\u1fe6\u1fe7\u1ff6\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06"
    "\ufb13\ufb14\ufb15\ufb16\ufb17"
)


def case_map(name: str, v: Any, upper: bool) -> str:
    s = str_arg(name, v)
    if s.isascii():
        return s.upper() if upper else s.lower()
    out = []
    for ch in s:
        m = ch.upper() if upper else ch.lower()
        if len(m) != 1:
            # Python's full case mapping; Go maps one rune to one rune
            if upper and ch in _NO_SIMPLE_UPPER:
                m = ch
            elif not upper and ch == "\u0130":
                m = "i"
            else:
                raise Unevaluable(f"{name}: a character Go maps differently")
        out.append(m)
    return nfc("".join(out))


_GO_SPACE = set("\t\n\v\f\r \x85\xa0")


def _is_go_space(ch: str) -> bool:
    return ch in _GO_SPACE or (ord(ch) > 0xFF and unicodedata.category(ch) in ("Zs", "Zl", "Zp"))


def fn_trimspace(v: Any) -> str:
    s = str_arg("trimspace", v)
    i, j = 0, len(s)
    while i < j and _is_go_space(s[i]):
        i += 1
    while j > i and _is_go_space(s[j - 1]):
        j -= 1
    return s[i:j]


def fn_length(v: Any) -> int:
    if v is None:
        raise EvalError("length: argument must not be null")
    if isinstance(v, str):
        return len(graphemes(v))
    if isinstance(v, list | dict):
        return len(v)
    raise EvalError(f"cannot take the length of a {type_name(v)}")


def fn_substr(s: Any, offset: Any, length: Any) -> str:
    clusters = graphemes(str_arg("substr", s))
    off, ln = int_arg("substr", offset), int_arg("substr", length)
    if off < 0:
        off += len(clusters)
    if off < 0 or off > len(clusters) or ln < -1:
        raise Unevaluable("substr: offset or length outside the text")
    part = clusters[off:] if ln == -1 else clusters[off : off + ln]
    return nfc("".join(part))


def fn_replace(s: Any, old: Any, new: Any) -> str:
    text, o, n = str_arg("replace", s), str_arg("replace", old), str_arg("replace", new)
    if len(o) > 1 and o.startswith("/") and o.endswith("/"):
        raise Unevaluable("regex replace is not supported")
    return nfc(text.replace(o, n))


def fn_split(sep: Any, s: Any) -> ListVal:
    sp, text = str_arg("split", sep), str_arg("split", s)
    return ListVal(text.split(sp) if sp else list(text))


def fn_join(sep: Any, *lists: Any) -> str:
    s = str_arg("join", sep)
    if not lists:
        raise EvalError("join: at least one list is required")
    items = []
    for lst in lists:
        for x in coll_arg("join", lst):
            if x is None:
                raise EvalError("join: null element")
            items.append(str_arg("join", x))
    return nfc(s.join(items))


def fn_trim(s: Any, cutset: Any) -> str:
    return str_arg("trim", s).strip(str_arg("trim", cutset))


def _regex_args(name: str, pattern: Any, s: Any) -> tuple[Any, str]:
    p, text = str_arg(name, pattern), str_arg(name, s)
    return compiled(p, text), text


def _match_value(m: Any) -> Any:
    names = m.re.groupindex
    if names and len(names) != m.re.groups:
        raise Unevaluable("named and unnamed groups together")
    if names:
        return LooseDict({name: m.group(name) for name in names})
    if m.re.groups:
        return LooseList(m.groups())
    return m.group(0)


def fn_regex(pattern: Any, s: Any) -> Any:
    rx, text = _regex_args("regex", pattern, s)
    m = rx.search(text)
    if m is None:
        raise EvalError("pattern did not match any part of the given string")
    return _match_value(m)


def fn_regexall(pattern: Any, s: Any) -> Any:
    rx, text = _regex_args("regexall", pattern, s)
    found = list(rx.finditer(text))
    if any(m.end() == m.start() for m in found):
        # Go steps past an empty match next to the previous match; Python does not
        raise Unevaluable("regexall with empty matches")
    return LooseList(_match_value(m) for m in found)
