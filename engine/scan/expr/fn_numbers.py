"""Number functions and the ``to*`` conversions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import EvalError, Unevaluable
from .fn_args import coll_arg, num_arg
from .values import (
    Respelled,
    add,
    is_number,
    make_number,
    to_bool,
    to_num,
    to_str,
    type_name,
)


def fn_tostring(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, list | dict):
        raise EvalError(f"cannot convert a {type_name(v)} to a string")
    return to_str(v)


def fn_tonumber(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, list | dict):
        raise EvalError(f"cannot convert a {type_name(v)} to a number")
    return to_num(v)


def fn_tobool(v: Any) -> bool | None:
    if v is None:
        return None
    return to_bool(v)


def fn_sum(coll: Any) -> Any:
    items = coll_arg("sum", coll)
    if not items:
        raise EvalError("sum: cannot sum an empty list")
    if not all(is_number(x) for x in items):
        raise Unevaluable("sum of values that are not all numbers")
    total = items[0]
    for x in items[1:]:
        total = add(total, x)
    return total


def rounded(name: str, v: Any, fn: Callable[[Any], int]) -> Any:
    n = num_arg(name, v)
    if isinstance(n, Respelled):
        raise Unevaluable(f"{name} of a whole number written as a decimal")
    return make_number(fn(n))
