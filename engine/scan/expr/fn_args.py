"""Arguments of Terraform functions, converted as Terraform converts them to
the parameter's type (a number given for a string, ``null`` refused)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import EvalError, Unevaluable
from .values import (
    is_seq,
    to_num,
    to_str,
    type_name,
)


def str_arg(name: str, v: Any) -> str:
    """An argument of a ``string`` parameter, converted as Terraform converts it."""
    if v is None:
        raise EvalError(f"{name}: argument must not be null")
    if isinstance(v, list | dict):
        raise EvalError(f"{name}: a string is required, got {type_name(v)}")
    return to_str(v)


def int_arg(name: str, v: Any) -> int:
    if v is None:
        raise EvalError(f"{name}: argument must not be null")
    n = to_num(v)
    if not isinstance(n, int):
        raise Unevaluable(f"{name}: a fractional number where a whole one is used")
    return n


def coll_arg(name: str, v: Any) -> list[Any]:
    if v is None:
        raise EvalError(f"{name}: argument must not be null")
    if not is_seq(v):
        raise EvalError(f"{name}: a list is required, got {type_name(v)}")
    return list(v)


def num_args(name: str, *vals: Any) -> list[Any]:
    if not vals:
        raise EvalError(f"{name}: at least one number is required")
    if any(v is None for v in vals):
        raise EvalError(f"{name}: argument must not be null")
    return [to_num(v) for v in vals]


def num_arg(name: str, v: Any) -> Any:
    return num_args(name, v)[0]


def text_fn(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return fn(*[str_arg(name, a) for a in args])

    return call
