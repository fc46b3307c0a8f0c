"""The validation-expression evaluator, kept under its old name.

It lives in :mod:`.expr`, split by what each part holds: ``lexer``, ``parser``,
``values`` (types, conversions, equality), ``functions`` and ``evaluator``.
"""

from __future__ import annotations

from .expr import (
    FUNCTIONS,
    EvalError,
    Evaluator,
    Unevaluable,
    equal,
    evaluate,
    parse,
    parse_template,
)

__all__ = [
    "FUNCTIONS",
    "EvalError",
    "Evaluator",
    "Unevaluable",
    "equal",
    "evaluate",
    "parse",
    "parse_template",
]
