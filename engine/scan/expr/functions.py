"""The Terraform functions the evaluator knows, by name (:data:`FUNCTIONS`).

Each follows Terraform's own implementation where it differs from Python's
obvious one; where the answer would rest on something not modelled, a function
raises :class:`~.errors.Unevaluable`. They live by kind: ``fn_text`` (strings and
regexes), ``fn_collections``, ``fn_numbers``, ``fn_network``; ``fn_args`` converts
arguments as Terraform does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .fn_args import num_arg, num_args, text_fn
from .fn_collections import (
    fn_alltrue,
    fn_anytrue,
    fn_coalesce,
    fn_compact,
    fn_concat,
    fn_contains,
    fn_distinct,
    fn_element,
    fn_flatten,
    fn_index,
    fn_keys,
    fn_lookup,
    fn_merge,
    fn_one,
    fn_reverse,
    fn_sort,
    fn_tolist,
    fn_tomap,
    fn_toset,
    fn_values,
)
from .fn_network import fn_cidrhost, fn_cidrnetmask, fn_cidrsubnet
from .fn_numbers import fn_sum, fn_tobool, fn_tonumber, fn_tostring, rounded
from .fn_text import (
    case_map,
    fn_join,
    fn_length,
    fn_regex,
    fn_regexall,
    fn_replace,
    fn_split,
    fn_substr,
    fn_trim,
    fn_trimspace,
)

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "regex": fn_regex,
    "regexall": fn_regexall,
    "length": fn_length,
    "contains": fn_contains,
    "alltrue": fn_alltrue,
    "anytrue": fn_anytrue,
    "startswith": text_fn("startswith", lambda s, p: s.startswith(p)),
    "endswith": text_fn("endswith", lambda s, p: s.endswith(p)),
    "strcontains": text_fn("strcontains", lambda s, p: p in s),
    "lower": lambda s: case_map("lower", s, upper=False),
    "upper": lambda s: case_map("upper", s, upper=True),
    "trimspace": fn_trimspace,
    "trimprefix": text_fn("trimprefix", str.removeprefix),
    "trimsuffix": text_fn("trimsuffix", str.removesuffix),
    "split": fn_split,
    "join": fn_join,
    "substr": fn_substr,
    "replace": fn_replace,
    "tostring": fn_tostring,
    "tonumber": fn_tonumber,
    "tobool": fn_tobool,
    "tolist": fn_tolist,
    "toset": fn_toset,
    "tomap": fn_tomap,
    "distinct": fn_distinct,
    "keys": fn_keys,
    "values": fn_values,
    "lookup": fn_lookup,
    "coalesce": fn_coalesce,
    "concat": fn_concat,
    "flatten": fn_flatten,
    "index": fn_index,
    "cidrhost": fn_cidrhost,
    "cidrnetmask": fn_cidrnetmask,
    "cidrsubnet": fn_cidrsubnet,
    "sum": fn_sum,
    "compact": fn_compact,
    "element": fn_element,
    "one": fn_one,
    "merge": fn_merge,
    "reverse": fn_reverse,
    "sort": fn_sort,
    "trim": fn_trim,
    "min": lambda *v: min(num_args("min", *v)),
    "max": lambda *v: max(num_args("max", *v)),
    "abs": lambda v: abs(num_arg("abs", v)),
    "floor": lambda v: rounded("floor", v, math.floor),
    "ceil": lambda v: rounded("ceil", v, math.ceil),
}

__all__ = ["FUNCTIONS"]
