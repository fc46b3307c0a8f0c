"""Line numbers the parsers do not give: where a key is assigned, or commented out.

python-hcl2 and :mod:`json` return values only, so these scanners read the text
themselves. They only look at the top level of the file (not inside ``{}``/``[]``
values, strings, heredocs or block comments).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ASSIGN_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_-]*)\s*=(?!=)")
_COMMENTED_RE = re.compile(r"^\s*(?:#+|//+)\s*([A-Za-z_][A-Za-z0-9_-]*)\s*=(?!=)")
_HEREDOC_RE = re.compile(r"<<-?([A-Za-z_][A-Za-z0-9_]*)\s*$")


@dataclass
class KeyLines:
    """1-based lines of the top-level keys of one file."""

    assigned: dict[str, int] = field(default_factory=dict)
    commented: dict[str, int] = field(default_factory=dict)
    repeated: dict[str, int] = field(default_factory=dict)
    """Keys assigned more than once: the line of the second assignment."""

    def line_of(self, key: str) -> int | None:
        return self.assigned.get(key) or self.commented.get(key)


def _scan_code(line: str, depth: int, in_comment: bool) -> tuple[int, bool, str | None]:
    """Track bracket depth over one line, skipping strings and comments.

    Returns the new depth, whether a block comment is still open, and a heredoc
    marker if the line opens one."""
    i, n = 0, len(line)
    in_str = False
    interp = 0
    while i < n:
        c = line[i]
        if in_comment:
            j = line.find("*/", i)
            if j < 0:
                return depth, True, None
            in_comment = False
            i = j + 2
            continue
        if in_str:
            if c == "\\":
                i += 2
                continue
            if line.startswith("${", i):
                interp += 1
                i += 2
                continue
            if c == "}" and interp:
                interp -= 1
            elif c == '"' and not interp:
                in_str = False
            i += 1
            continue
        if c == '"':
            in_str = True
        elif c == "#" or line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            in_comment = True
            i += 2
            continue
        elif line.startswith("<<", i):
            m = _HEREDOC_RE.match(line, i)
            if m:
                return depth, False, m.group(1)
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        i += 1
    return depth, in_comment, None


def hcl_key_lines(text: str) -> KeyLines:
    """Where each top-level attribute of a ``.tfvars`` file is set or commented out.

    A key both set and commented out reports the assignment; a key commented out
    several times reports the first."""
    out = KeyLines()
    depth = 0
    in_comment = False
    heredoc: str | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if heredoc is not None:
            if line.strip() == heredoc:
                heredoc = None
            continue
        if depth == 0 and not in_comment:
            m = _ASSIGN_RE.match(line)
            if m:
                if m.group(1) in out.assigned:
                    out.repeated.setdefault(m.group(1), lineno)
                out.assigned.setdefault(m.group(1), lineno)
            else:
                m = _COMMENTED_RE.match(line)
                if m:
                    out.commented.setdefault(m.group(1), lineno)
        depth, in_comment, heredoc = _scan_code(line, depth, in_comment)
    return out


def json_key_lines(text: str) -> KeyLines:
    """Where each key of a JSON file's top-level object is."""
    out = KeyLines()
    depth = 0
    lineno = 1
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            lineno += 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            key = text[i + 1 : j]
            k = j + 1
            while k < n and text[k] in " \t\r\n":
                k += 1
            if depth == 1 and k < n and text[k] == ":":
                name = _json_unescape(key)
                if name in out.assigned:
                    out.repeated.setdefault(name, lineno)
                out.assigned.setdefault(name, lineno)
            lineno += text.count("\n", i, j)
            i = j
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        i += 1
    return out


def _json_unescape(raw: str) -> str:
    import json

    try:
        return str(json.loads(f'"{raw}"'))
    except ValueError:
        return raw


def hcl_assignment_spans(text: str) -> dict[str, tuple[int, int]]:
    """The 1-based first and last line of each top-level attribute's first
    assignment in a ``.tfvars`` file (a value may span lines: a list, a heredoc)."""
    spans: dict[str, tuple[int, int]] = {}
    depth = 0
    in_comment = False
    heredoc: str | None = None
    current: str | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if heredoc is not None:
            if line.strip() == heredoc:
                heredoc = None
                if current is not None and depth == 0:
                    spans[current] = (spans[current][0], lineno)
                    current = None
            continue
        if depth == 0 and not in_comment:
            m = _ASSIGN_RE.match(line)
            if m and m.group(1) not in spans:
                current = m.group(1)
                spans[current] = (lineno, lineno)
        depth, in_comment, heredoc = _scan_code(line, depth, in_comment)
        if current is not None and depth == 0 and heredoc is None and not in_comment:
            spans[current] = (spans[current][0], lineno)
            current = None
    return spans


def hcl_inline_comment(line: str) -> str | None:
    """The ``# ...`` or ``// ...`` comment ending a one-line assignment, if any."""
    in_str = False
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "#" or line.startswith("//", i):
            return line[i:]
        i += 1
    return None


__all__ = [
    "KeyLines",
    "hcl_assignment_spans",
    "hcl_inline_comment",
    "hcl_key_lines",
    "json_key_lines",
]
