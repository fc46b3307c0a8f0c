"""A small evaluator for the HCL expressions variable ``validation`` blocks use.

It covers literals, ``var.*`` references, operators, conditionals, ``for``
expressions, string templates and the functions listed in :data:`FUNCTIONS`.
Anything else raises :class:`Unevaluable`: the condition is then left for
``terraform plan`` to judge, never guessed.

Two failures are kept apart on purpose:

* :class:`EvalError` — the expression is understood and fails the way Terraform
  would fail it (``regex`` without a match, ``tonumber("x")``). ``can()`` and
  ``try()`` turn it into a value, exactly as in Terraform.
* :class:`Unevaluable` — this evaluator does not know enough. It passes through
  ``can()`` and ``try()`` untouched.

Where things are: ``lexer`` and ``parser`` (source to tuple nodes), ``values``
(how Terraform's typed values are held, exact numbers, equality), ``types``
(declared type constraints and conversion to them), ``evaluator`` (operators,
conditionals, ``for``, splats, ``can``/``try``), ``functions`` (the registry) with
``fn_text``, ``fn_collections``, ``fn_numbers``, ``fn_network``, ``fn_args``, and
``re2`` (Terraform's regex syntax run with Python's ``re``).
"""

from __future__ import annotations

from .errors import EvalError, Unevaluable
from .evaluator import Evaluator, evaluate
from .functions import FUNCTIONS
from .parser import parse, parse_template
from .values import equal

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
