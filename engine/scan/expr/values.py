"""Values as the evaluator holds them: kinds, conversions, equality.

Terraform's values are typed (cty). The evaluator keeps plain Python values and
marks the kinds that Python alone would confuse:

* numbers are ``int`` when whole and :class:`~decimal.Decimal` otherwise, never
  ``float`` (Terraform's numbers are 512-bit, not IEEE doubles);
* strings are NFC-normalised, as every cty string is;
* a plain ``list`` is a tuple (``[1, "a"]``), :class:`ListVal` a ``list(T)``,
  :class:`SetVal` a ``set(T)``; a plain ``dict`` is an object, :class:`MapVal`
  a ``map(T)``. ``tolist(["a"]) == ["a"]`` is false in Terraform: a list is
  never equal to a tuple;
* :class:`LooseList` / :class:`LooseDict` hold a collection whose exact type
  the evaluator does not track: it can be read, but comparing it is left for
  plan.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from .errors import EvalError, Unevaluable

Number = int | Decimal


class ListVal(list):  # type: ignore[type-arg]
    """A value of type ``list(T)``."""


class SetVal(list):  # type: ignore[type-arg]
    """A value of type ``set(T)``, deduplicated and in Terraform's order."""


class MapVal(dict):  # type: ignore[type-arg]
    """A value of type ``map(T)``."""


class LooseList(list):  # type: ignore[type-arg]
    """A list, set or tuple whose exact type is not tracked."""


class LooseDict(dict):  # type: ignore[type-arg]
    """A map or object whose exact type is not tracked."""


class Respelled(int):
    """A whole number a file wrote as a decimal or with an exponent (``100.0``,
    ``1e2``): terraform 1.0's ``floor``/``ceil`` do not return it unchanged."""


def is_number(v: Any) -> bool:
    return isinstance(v, int | Decimal | float) and not isinstance(v, bool)


def is_seq(v: Any) -> bool:
    return isinstance(v, list | tuple)


def type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if is_number(v):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, SetVal):
        return "set"
    if isinstance(v, ListVal):
        return "list"
    if isinstance(v, list | tuple):
        return "tuple"
    if isinstance(v, MapVal):
        return "map"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


# ------------------------------------------------------------------ numbers

_LIMIT = 10**300  # far inside a 512-bit mantissa's exact range and any real condition


def make_number(v: int | Decimal | Fraction | float) -> Number:
    """A number in its canonical form: ``int`` when whole, else ``Decimal``."""
    if isinstance(v, float):
        v = Decimal(repr(v))
    if isinstance(v, Fraction):
        if v.denominator == 1:
            v = v.numerator
        else:
            d = _fraction_decimal(v)
            if d is None:
                raise Unevaluable("a number with no exact decimal form")
            v = d
    if isinstance(v, Decimal):
        if not v.is_finite():
            raise Unevaluable("not a finite number")
        if v == v.to_integral_value():
            v = int(v)
        else:
            return v.normalize()
    if abs(v) > _LIMIT:
        raise Unevaluable("a number too large to model")
    return v


def _fraction_decimal(f: Fraction) -> Decimal | None:
    den = f.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den != 1:
        return None
    k = max(twos, fives)
    if k > 300:
        return None
    return Decimal(f.numerator * 10**k // f.denominator).scaleb(-k)


def binary_exact(v: Number) -> bool:
    """Whether ``v`` is exactly a binary fraction, so Terraform's 512-bit
    arithmetic on it is exact too (``0.5`` is, ``0.1`` is not)."""
    if isinstance(v, int):
        return True
    den = Fraction(v).denominator
    return den & (den - 1) == 0 and den < 2**400


def frac(v: Number) -> Fraction:
    return Fraction(v)


# Go's big.ParseFloat (base 10) as cty's string-to-number conversion uses it.
_DECIMAL_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def parse_number(text: str) -> Number:
    """A string as Terraform converts it to a number.

    Raises :class:`EvalError` for what Terraform refuses (``" 7"``, ``"1_0"``,
    ``"0x10"``, ``"Inf"``), :class:`Unevaluable` for spellings not modelled."""
    if _DECIMAL_RE.fullmatch(text):
        try:
            d = Decimal(text)
        except InvalidOperation:
            raise Unevaluable(f"cannot model {text!r} as a number") from None
        if abs(d.adjusted()) > 300:
            raise Unevaluable("a number too large to model")
        return make_number(d)
    if re.fullmatch(r"[+-]?[0-9.]*[pP][+-]?[0-9]+|[+-]?(?i:inf|infinity)", text):
        raise Unevaluable(f"cannot model {text!r} as a number")
    raise EvalError(f"cannot convert {text!r} to a number")


def number_text(v: Number) -> str:
    """A number as Terraform writes it in a string (no exponent, no trailing 0)."""
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        v = make_number(v)
        if isinstance(v, int):
            return str(v)
    return format(v.normalize(), "f")


# ----------------------------------------------------------------- arithmetic


def add(x: Any, y: Any) -> Any:
    """``x + y`` for numbers, where Terraform's result is exact."""
    return arith("+", x, y)


def arith(op: str, x: Any, y: Any) -> Any:
    """Arithmetic as Terraform's 512-bit numbers do it, where that is exact."""
    if not (binary_exact(x) and binary_exact(y)):
        raise Unevaluable("arithmetic on decimals Terraform rounds")
    fx, fy = frac(x), frac(y)
    if op == "+":
        r = fx + fy
    elif op == "-":
        r = fx - fy
    elif op == "*":
        r = fx * fy
    elif fy == 0:
        raise Unevaluable(f"{op} by zero")  # an infinity in Terraform, an error in places
    elif op == "/":
        r = fx / fy
    else:
        if not (isinstance(x, int) and isinstance(y, int)):
            raise Unevaluable("modulo of fractions")
        m = abs(x) % abs(y)
        return -m if x < 0 else m
    result = make_number(r)
    if not binary_exact(result):
        raise Unevaluable("a result Terraform rounds")
    return result


# --------------------------------------------------------------- conversions


def nfc(s: str) -> str:
    return s if s.isascii() else unicodedata.normalize("NFC", s)


def to_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if is_number(v):
        return number_text(v)
    if isinstance(v, str):
        return v
    if v is None:
        raise EvalError("cannot use a null value in a string")
    raise EvalError(f"cannot convert a {type_name(v)} to a string")


def to_num(v: Any) -> Number:
    if isinstance(v, bool) or v is None:
        raise EvalError(f"a number is required, got {type_name(v)}")
    if is_number(v):
        return make_number(v) if isinstance(v, float) else v
    if isinstance(v, str):
        return parse_number(v)
    raise EvalError(f"a number is required, got {type_name(v)}")


def to_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if v in ("true", "1"):
        return True
    if v in ("false", "0"):
        return False
    raise EvalError(f"a bool is required, got {type_name(v)}")


def sort_key(v: Any) -> tuple[int, Any]:
    if isinstance(v, str):
        return (1, v)
    if isinstance(v, bool):
        return (0, int(v))
    if is_number(v):
        return (0, v)
    return (2, repr(v))


# ------------------------------------------------------------------ equality


def _primitive(v: Any) -> bool:
    return isinstance(v, str | bool) or is_number(v)


def equal(a: Any, b: Any) -> bool:
    """Terraform's ``==``: values of different types are never equal.

    Raises :class:`Unevaluable` where the answer hangs on a type the evaluator
    does not track (two empty ``list(T)`` of unknown ``T``, a loose collection)."""
    if a is None or b is None:
        return a is None and b is None
    if _primitive(a) or _primitive(b):
        if isinstance(a, bool) or isinstance(b, bool):
            return isinstance(a, bool) and isinstance(b, bool) and a == b
        if is_number(a) and is_number(b):
            return bool(a == b)
        if isinstance(a, str) and isinstance(b, str):
            return a == b
        return False
    if isinstance(a, LooseList | LooseDict) or isinstance(b, LooseList | LooseDict):
        raise Unevaluable("comparing a collection whose type is not tracked")
    if type(a) is not type(b):
        # list vs tuple, map vs object, set vs list: different types.
        if isinstance(a, list | dict) and isinstance(b, list | dict):
            return False
        raise Unevaluable(f"comparing a {type_name(a)} with a {type_name(b)}")
    if isinstance(a, list):
        if len(a) != len(b):
            return False
        if not a and isinstance(a, ListVal | SetVal):
            raise Unevaluable("empty collections of element types not tracked")
        if isinstance(a, SetVal):
            return _all_equal([(x, y) for x, y in zip(a, b, strict=True)])
        return _all_equal(list(zip(a, b, strict=True)))
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return False
        if not a and isinstance(a, MapVal):
            raise Unevaluable("empty maps of element types not tracked")
        return _all_equal([(a[k], b[k]) for k in a])
    raise Unevaluable(f"comparing {type_name(a)} values")


def _all_equal(pairs: list[tuple[Any, Any]]) -> bool:
    unsure: Unevaluable | None = None
    for x, y in pairs:
        if x is None and y is None:
            # two nulls inside collections: their types (not tracked) decide
            unsure = Unevaluable("nulls of types not tracked")
            continue
        try:
            if not equal(x, y):
                return False
        except Unevaluable as e:
            unsure = e
    if unsure is not None:
        raise unsure
    return True


def loosen(v: Any) -> Any:
    """``v`` with its collection type forgotten (kept readable)."""
    if isinstance(v, list) and not isinstance(v, LooseList):
        return LooseList(v)
    if isinstance(v, dict) and not isinstance(v, LooseDict):
        return LooseDict(v)
    return v
