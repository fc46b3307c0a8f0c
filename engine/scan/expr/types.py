"""Type constraints (``type = ...`` of a variable) and conversion to them.

A value from a variable file reaches a ``validation`` condition converted to the
variable's declared type, the way Terraform converts it:

* ``"7"`` becomes a number and ``7`` a string; ``" 7"``, ``"1_0"``, ``"0x10"``
  are not numbers; ``"true"``/``"1"`` and ``"false"``/``"0"`` are bools;
* an object keeps only its declared attributes; a missing ``optional(T)``
  attribute is ``null`` and a ``null`` one takes ``optional(T, default)``'s
  default (itself converted, nested objects included);
* ``list``/``set``/``map`` of ``any`` need one element type: mixed primitives
  become strings, mixed structures are left for plan.

:func:`convert` raises :class:`TypeMismatch` where Terraform refuses the value
and :class:`Unevaluable` where the outcome is not modelled.
"""

from __future__ import annotations

from typing import Any

from .errors import EvalError, Unevaluable
from .parser import parse
from .values import (
    ListVal,
    MapVal,
    SetVal,
    equal,
    is_number,
    parse_number,
    sort_key,
    to_str,
    type_name,
)

PRIMITIVES = ("string", "number", "bool", "any")
_NO_DEFAULT = object()


class TypeMismatch(EvalError):
    """The value cannot be converted to the declared type."""


def parse_type(src: str) -> Any:
    """A type expression as nested tuples: ``("string",)``, ``("list", T)``,
    ``("object", {name: (T, optional, default)})``, ``("tuple", [T, ...])``."""
    return _type(parse(src), in_object=False)


def _type(node: Any, in_object: bool) -> Any:
    kind = node[0]
    if kind == "ref" and node[1] in PRIMITIVES:
        return (node[1],)
    if kind == "call" and not node[3]:
        name, args = node[1], node[2]
        if name in ("list", "set", "map") and len(args) == 1:
            return (name, _type(args[0], False))
        if name == "object" and len(args) == 1 and args[0][0] == "obj":
            attrs: dict[str, Any] = {}
            for k, v in args[0][1]:
                if k[0] != "lit" or not isinstance(k[1], str):
                    raise Unevaluable("an object attribute name that is not a name")
                attrs[k[1]] = _attr(v)
            return ("object", attrs)
        if name == "tuple" and len(args) == 1 and args[0][0] == "list":
            return ("tuple", [_type(a, False) for a in args[0][1]])
    raise Unevaluable("a type constraint not modelled")


def _attr(node: Any) -> tuple[Any, bool, Any]:
    if node[0] == "call" and node[1] == "optional" and not node[3]:
        args = node[2]
        if len(args) == 1:
            return (_type(args[0], False), True, _NO_DEFAULT)
        if len(args) == 2:
            from .evaluator import evaluate

            t = _type(args[0], False)
            try:
                default = evaluate(args[1], {})
            except EvalError:
                raise Unevaluable("a default that does not evaluate") from None
            return (t, True, convert(default, t))
        raise Unevaluable("optional() with more than two arguments")
    return (_type(node, True), False, _NO_DEFAULT)


def has_any(t: Any) -> bool:
    kind = t[0]
    if kind == "any":
        return True
    if kind in ("list", "set", "map"):
        return has_any(t[1])
    if kind == "tuple":
        return any(has_any(x) for x in t[1])
    if kind == "object":
        return any(has_any(a[0]) for a in t[1].values())
    return False


def convert(value: Any, t: Any) -> Any:
    """``value`` converted to type ``t`` as Terraform converts a variable's value."""
    if value is None:
        return None
    kind = t[0]
    if kind == "any":
        return value
    if kind == "string":
        if isinstance(value, bool) or is_number(value) or isinstance(value, str):
            return to_str(value)
        raise TypeMismatch("a string")
    if kind == "number":
        if isinstance(value, bool):
            raise TypeMismatch("a number")
        if is_number(value):
            return value
        if isinstance(value, str):
            try:
                return parse_number(value)
            except TypeMismatch:
                raise
            except EvalError:
                raise TypeMismatch("a number") from None
        raise TypeMismatch("a number")
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if value in ("true", "1"):
            return True
        if value in ("false", "0"):
            return False
        raise TypeMismatch("a bool")
    if kind in ("list", "set"):
        if not isinstance(value, list):
            raise TypeMismatch(f"a {kind}")
        items = _elements([convert(v, t[1]) for v in value], t[1])
        if kind == "list":
            return ListVal(items)
        return SetVal(_set_order(items))
    if kind == "map":
        if not isinstance(value, dict):
            raise TypeMismatch("a map")
        keys = list(value)
        vals = _elements([convert(value[k], t[1]) for k in keys], t[1])
        return MapVal(zip(keys, vals, strict=True))
    if kind == "tuple":
        if not isinstance(value, list) or len(value) != len(t[1]):
            raise TypeMismatch(f"a tuple of {len(t[1])} elements")
        return [convert(v, et) for v, et in zip(value, t[1], strict=True)]
    if kind == "object":
        if not isinstance(value, dict):
            raise TypeMismatch("an object")
        out: dict[str, Any] = {}
        for name, (at, optional, default) in t[1].items():
            if name in value:
                v = convert(value[name], at)
            elif optional:
                v = None
            else:
                raise TypeMismatch(f"an object with attribute {name!r}")
            if v is None and default is not _NO_DEFAULT:
                v = default
            out[name] = v
        return out
    raise Unevaluable(f"type {kind} not modelled")


def _elements(items: list[Any], et: Any) -> list[Any]:
    """Elements of one collection as one element type (``any`` unified)."""
    if et[0] != "any":
        if has_any(et) and len(items) > 1:
            raise Unevaluable("a collection of partly dynamic type")
        return items
    kinds = {type_name(x) for x in items if x is not None}
    if len(kinds) <= 1:
        if kinds and next(iter(kinds)) not in ("string", "number", "bool") and len(items) > 1:
            raise Unevaluable("a collection of structured values of type any")
        if not kinds and items:
            raise Unevaluable("a collection of only nulls")
        return items
    if kinds <= {"string", "number", "bool"} and "string" in kinds:
        return [None if x is None else to_str(x) for x in items]
    if kinds == {"number", "bool"}:
        raise TypeMismatch("a collection of elements of one type")
    raise Unevaluable("a collection of mixed values")


def _set_order(items: list[Any]) -> list[Any]:
    if any(x is None for x in items):
        raise Unevaluable("a set holding null")
    if any(isinstance(x, list | dict) for x in items) and len(items) > 1:
        raise Unevaluable("the order of a set of structured values")
    out: list[Any] = []
    for x in items:
        if not any(equal(x, y) for y in out):
            out.append(x)
    return sorted(out, key=sort_key)


__all__ = ["TypeMismatch", "convert", "has_any", "parse_type"]
