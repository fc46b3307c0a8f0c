"""Declared types and conversion to them (engine/scan/expr/types.py, values.py)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from dreamlake.engine.scan.expr.errors import Unevaluable
from dreamlake.engine.scan.expr.types import TypeMismatch, convert, parse_type
from dreamlake.engine.scan.expr.values import ListVal, MapVal, SetVal, equal


def conv(value: Any, type_src: str) -> Any:
    return convert(value, parse_type(type_src))


def test_optional_attributes_are_null_or_their_default() -> None:
    t = "object({ a = string, b = optional(number), c = optional(number, 5) })"
    assert conv({"a": "x"}, t) == {"a": "x", "b": None, "c": 5}
    assert conv({"a": "x", "c": None}, t)["c"] == 5
    assert conv({"a": "x", "c": "7"}, t)["c"] == 7
    # attributes the type does not declare are dropped
    assert conv({"a": "x", "z": 1}, t) == {"a": "x", "b": None, "c": 5}
    with pytest.raises(TypeMismatch):
        conv({"b": 1}, t)


def test_nested_defaults_apply() -> None:
    t = "object({ db = optional(object({ size = optional(number, 20) }), {}) })"
    assert conv({}, t) == {"db": {"size": 20}}
    assert conv({"db": {}}, t) == {"db": {"size": 20}}
    assert conv({"db": None}, t) == {"db": {"size": 20}}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("7", 7), ("+7", 7), (".5", Decimal("0.5")), ("5.", 5), ("1e3", 1000), ("-0", 0)],
)
def test_strings_terraform_reads_as_numbers(value: str, expected: Any) -> None:
    assert conv(value, "number") == expected


@pytest.mark.parametrize("value", [" 7", "7 ", "1_0", "0x10", "", "7a", "NaN", True])
def test_strings_terraform_refuses_as_numbers(value: Any) -> None:
    with pytest.raises(TypeMismatch):
        conv(value, "number")


def test_infinity_is_left_to_plan() -> None:
    with pytest.raises(Unevaluable):
        conv("Inf", "number")


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("1", True), ("0", False)])
def test_bool_strings(value: str, expected: bool) -> None:
    assert conv(value, "bool") is expected


@pytest.mark.parametrize("value", ["True", "yes", "t", 1, ""])
def test_bool_refusals(value: Any) -> None:
    with pytest.raises(TypeMismatch):
        conv(value, "bool")


def test_collections_keep_their_kind() -> None:
    assert isinstance(conv(["a"], "list(string)"), ListVal)
    assert conv(["b", "a", "a"], "set(string)") == ["a", "b"]
    assert isinstance(conv(["a"], "set(string)"), SetVal)
    assert isinstance(conv({"a": 1}, "map(string)"), MapVal)
    assert conv({"a": 1}, "map(string)") == {"a": "1"}
    assert conv([1, "a"], "list(any)") == ["1", "a"]
    with pytest.raises(TypeMismatch):
        conv([1, True], "list(any)")
    # a list is never equal to a tuple
    assert equal(conv(["a"], "list(string)"), ["a"]) is False


def test_numbers_become_strings_as_terraform_writes_them() -> None:
    assert conv(Decimal("1.50"), "string") == "1.5"
    assert conv(1000, "string") == "1000"
    assert conv(True, "string") == "true"
