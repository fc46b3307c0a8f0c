"""Text every backend and every answer can hold: Unicode that encodes to UTF-8.

JSON lets a string carry a lone surrogate (``"\\udcff"``); UTF-8 cannot encode one,
so neither PostgreSQL, nor SQLite, nor a JSON answer can hold it. The JSON guard
refuses such a body with :func:`find_unencodable`; a row stored before the guard
knew is listed through :func:`mark_unencodable`, its bad strings shown escaped and
their places named. Pure, no I/O.
"""

from __future__ import annotations

from typing import Any

__all__ = ["encodable", "escaped", "find_unencodable", "mark_unencodable"]


def encodable(text: str) -> bool:
    """True when ``text`` encodes to UTF-8 (holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escaped(text: str) -> str:
    """``text`` with every code point UTF-8 cannot hold written as ``\\udcff``."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def find_unencodable(value: Any) -> tuple[list[str], str] | None:
    """The place of the first string (value or key) in ``value`` that UTF-8 cannot
    encode, as path parts (``["kwargs", "host"]``; a key's place ends with the key
    itself, escaped), and what is wrong there; None when every string encodes."""
    stack: list[tuple[Any, list[str]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if not encodable(item):
                return path, f"the text {escaped(item)[:60]!r} is not valid Unicode"
        elif isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str) and not encodable(key):
                    return [*path, escaped(key)], (
                        f"the key {escaped(key)[:60]!r} is not valid Unicode"
                    )
                stack.append((sub, [*path, str(key)]))
        elif isinstance(item, list):
            stack.extend((sub, [*path, str(i)]) for i, sub in enumerate(item))
    return None


def mark_unencodable(value: Any, prefix: str = "") -> tuple[Any, list[str]]:
    """``value`` with every string (value or key) UTF-8 cannot encode replaced by its
    escaped form, and the dotted places of those strings (empty when none)."""
    marked: list[str] = []

    def walk(item: Any, where: str) -> Any:
        if isinstance(item, str):
            if encodable(item):
                return item
            marked.append(where)
            return escaped(item)
        if isinstance(item, dict):
            out: dict[Any, Any] = {}
            for key, sub in item.items():
                name = key
                if isinstance(key, str) and not encodable(key):
                    name = escaped(key)
                    marked.append(f"{where}.{name}" if where else name)
                out[name] = walk(sub, f"{where}.{name}" if where else str(name))
            return out
        if isinstance(item, list):
            return [walk(sub, f"{where}[{i}]") for i, sub in enumerate(item)]
        return item

    return walk(value, prefix), marked
