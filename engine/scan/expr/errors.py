"""The two ways an expression fails: understood and failing, or not understood."""

from __future__ import annotations


class Unevaluable(Exception):
    """The expression uses something this evaluator does not implement."""


class EvalError(Exception):
    """The expression fails the way Terraform would fail it."""


__all__ = ["EvalError", "Unevaluable"]
