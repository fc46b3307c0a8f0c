"""Terraform's regular expressions: Go's RE2, run with RE2 itself where it is installed.

:func:`compiled` is what the regex functions call. With ``google-re2`` (a base
dependency) the pattern runs on RE2, Terraform's own semantics: Unicode classes
(``\\pL``), case folding and linear time as Terraform has them. Only C++ RE2's own
additions (``\\C``) are left for plan. Without it (a source checkout without the
package) the pattern is translated to Python's ``re``. On the differential corpus
(tests/engine/scan/test_tf_differential.py, terraform 1.11) RE2 took the scan's
"can't judge" verdicts from 119 to 106 of 952 cases (those on a regex condition
from 22 to 9), with none that disagrees with terraform.

Only what means the same in both is translated; anything else raises
:class:`Unevaluable` (left for plan), never a guess:

* ``\\d``, ``\\w``, ``\\b`` are ASCII-only in RE2 (compiled with ``re.ASCII``);
  ``\\s`` is ``[\\t\\n\\f\\r ]`` (no vertical tab, unlike Python's);
* ``$`` without the ``m`` flag matches only at the very end (Python's ``\\Z``);
  ``\\z`` is that end too;
* a ``{`` that does not start ``{n}``, ``{n,}`` or ``{n,m}`` is a literal (Python
  would read ``a{,3}`` as a repetition); counts above 1000 are an RE2 error;
* POSIX classes (``[[:alpha:]]``) are ASCII sets;
* look-arounds, back-references, possessive or nested repetitions and the
  like are not RE2 (an error there), so they are never evaluated here;
* ``(?i)`` folds Unicode case in RE2 but only ASCII with ``re.ASCII``: such a
  pattern on non-ASCII text is left for plan;
* Python's backtracking can take exponential time where RE2 cannot: a nested
  repetition on a long subject is left for plan too.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache
from typing import Any

from .errors import Unevaluable

_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_REPEAT_RE = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")
_FLAGS_RE = re.compile(r"\(\?([ims]*)(-[ims]*)?([:)])")
_SIMPLE_ESCAPES = set("nrtfva")


class Translated:
    def __init__(self, pattern: str, folds: bool, nested: bool) -> None:
        self.folds = folds
        self.nested = nested
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self.compiled = re.compile(pattern, re.ASCII)
            except re.error as e:
                raise Unevaluable(f"pattern is not understood: {e}") from None
            except RecursionError:
                raise Unevaluable("pattern is too deep") from None

    def check(self, subject: str) -> re.Pattern[str]:
        if self.folds and not subject.isascii():
            raise Unevaluable("case-insensitive match on non-ASCII text")
        if self.nested and len(subject) > 20:
            raise Unevaluable("nested repetition on a long subject")
        return self.compiled


def compiled(pattern: str, subject: str) -> Any:
    """``pattern`` compiled for a search of ``subject`` (``search``, ``finditer``;
    matches with ``re``'s API), or :class:`Unevaluable`."""
    engine = _re2(pattern)
    if engine is not None:
        return engine
    return translate(pattern).check(subject)


@lru_cache(maxsize=512)
def _re2(pattern: str) -> Any:
    """RE2's own compiled form (None: ``google-re2`` is not installed)."""
    try:
        import re2 as google_re2  # the google-re2 package, not this module
    except ImportError:
        return None
    if "\\C" in pattern.replace("\\\\", ""):
        raise Unevaluable("escape \\C is C++ RE2's, not Go's")
    try:
        return google_re2.compile(pattern)
    except Exception as e:  # re2.error, and a pattern the wrapper refuses
        raise Unevaluable(f"pattern is not understood: {e}") from None


@lru_cache(maxsize=512)
def translate(pattern: str) -> Translated:
    """The Python form of an RE2 pattern, or :class:`Unevaluable`."""
    out: list[str] = []
    i, n = 0, len(pattern)
    folds = False
    global_m = False
    any_m = False
    has_dollar = False
    # Per open group: whether a repetition or an alternation occurred inside it.
    groups: list[bool] = []
    nested = False
    last_was_repeat = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            piece, i = _escape(pattern, i, in_class=False)
            out.append(piece)
            last_was_repeat = False
            continue
        if c == "[":
            piece, i = _char_class(pattern, i)
            out.append(piece)
            last_was_repeat = False
            continue
        if c == "(":
            if pattern.startswith("(?", i):
                if pattern.startswith("(?P<", i):
                    end = pattern.find(">", i)
                    if end < 0 or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", pattern[i + 4 : end]):
                        raise Unevaluable("bad group name")
                    out.append(pattern[i : end + 1])
                    i = end + 1
                    groups.append(False)
                    last_was_repeat = False
                    continue
                m = _FLAGS_RE.match(pattern, i)
                if not m:
                    raise Unevaluable("group syntax RE2 does not share with Python")
                on, off, close = m.group(1), m.group(2) or "", m.group(3)
                if "i" in on:
                    folds = True
                if "m" in on:
                    any_m = True
                    if close == ")" and i == 0 and not off:
                        global_m = True
                if close == ")" and i != 0:
                    raise Unevaluable("flags in the middle of a pattern")
                out.append(m.group(0))
                i = m.end()
                if close == ":":
                    groups.append(False)
                last_was_repeat = False
                continue
            out.append("(")
            groups.append(False)
            i += 1
            last_was_repeat = False
            continue
        if c == ")":
            inner = groups.pop() if groups else False
            out.append(")")
            i += 1
            # a group holding a repetition, itself repeated, is what backtracks badly
            if i < n and pattern[i] in "*+?{" and inner:
                nested = True
            if groups and inner:
                groups[-1] = True
            last_was_repeat = False
            continue
        if c in "*+?" or (c == "{" and _REPEAT_RE.match(pattern, i)):
            if c == "{":
                m = _REPEAT_RE.match(pattern, i)
                assert m is not None
                lo, hi = int(m.group(1)), m.group(3)
                if lo > 1000 or (hi and int(hi) > 1000):
                    raise Unevaluable("repetition count above RE2's limit")
                token = m.group(0)
            else:
                token = c
            if last_was_repeat:
                raise Unevaluable("nested repetition operators")
            i += len(token)
            if i < n and pattern[i] == "?":
                token += "?"
                i += 1
            out.append(token)
            if groups:
                groups[-1] = True
            last_was_repeat = True
            continue
        last_was_repeat = False
        if c == "|" and groups:
            groups[-1] = True
        if c == "{":
            out.append("\\{")
        elif c == "}":
            out.append("\\}")
        elif c == "$":
            has_dollar = True
            out.append("$" if global_m else "\\Z")
        else:
            out.append(re.escape(c) if c in "#&~- \t\n\r\f\v" else c)
        i += 1
    if any_m and has_dollar and not global_m:
        raise Unevaluable("a scoped (?m) flag with $")
    return Translated("".join(out), folds, nested)


def _escape(p: str, i: int, in_class: bool) -> tuple[str, int]:
    if i + 1 >= len(p):
        raise Unevaluable("trailing backslash")
    e = p[i + 1]
    if e in "dDwW":
        return "\\" + e, i + 2
    if e == "s":
        return ("\\t\\n\\f\\r " if in_class else "[\\t\\n\\f\\r ]"), i + 2
    if e == "S" and not in_class:
        return "[^\\t\\n\\f\\r ]", i + 2
    if not in_class and e in "bBA":
        return "\\" + e, i + 2
    if not in_class and e == "z":
        return "\\Z", i + 2
    if e in _SIMPLE_ESCAPES:
        return "\\" + e, i + 2
    if e == "x" and re.fullmatch(r"[0-9A-Fa-f]{2}", p[i + 2 : i + 4]):
        return p[i : i + 4], i + 4
    if e.isascii() and not e.isalnum():
        return "\\" + e, i + 2
    raise Unevaluable(f"escape \\{e} is not modelled")


def _char_class(p: str, i: int) -> tuple[str, int]:
    out = ["["]
    j = i + 1
    n = len(p)
    if j < n and p[j] == "^":
        out.append("^")
        j += 1
    first = True
    while j < n:
        c = p[j]
        if c == "]" and not first:
            out.append("]")
            return "".join(out), j + 1
        first = False
        if c == "[" and p.startswith("[:", j):
            end = p.find(":]", j + 2)
            name = p[j + 2 : end] if end > 0 else ""
            if name not in _POSIX:
                raise Unevaluable("POSIX class not modelled")
            out.append(_POSIX[name])
            j = end + 2
            continue
        if c == "\\":
            piece, j = _escape(p, j, in_class=True)
            out.append(piece)
            continue
        out.append("\\" + c if c in "[]&~|" else c)
        j += 1
    raise Unevaluable("unterminated character class")


__all__ = ["Translated", "translate"]
