"""Values as the evaluator holds them: type names, conversions, equality."""

from __future__ import annotations

import re
from typing import Any

from .errors import EvalError
from .lexer import number


def type_name(v: Any) -> str:
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


def to_str(v: Any) -> str:
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
    raise EvalError(f"cannot convert a {type_name(v)} to a string")


def to_num(v: Any) -> int | float:
    if isinstance(v, bool) or v is None:
        raise EvalError(f"a number is required, got {type_name(v)}")
    if isinstance(v, int | float):
        return v
    if isinstance(v, str):
        s = v.strip()
        if s != v or not re.fullmatch(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?", s):
            raise EvalError(f"cannot convert {v!r} to a number")
        return number(s.lstrip("-")) * (-1 if s.startswith("-") else 1)
    raise EvalError(f"a number is required, got {type_name(v)}")


def to_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if v == "true":
        return True
    if v == "false":
        return False
    raise EvalError(f"a bool is required, got {type_name(v)}")


def seq(v: Any) -> list[Any]:
    if isinstance(v, list | tuple):
        return list(v)
    if isinstance(v, frozenset | set):
        return sorted(v, key=sort_key)
    raise EvalError(f"a list is required, got {type_name(v)}")


def sort_key(v: Any) -> tuple[int, Any]:
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
