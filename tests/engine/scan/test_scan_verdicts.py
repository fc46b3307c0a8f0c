"""What the scan blocks on and what it leaves to plan, through ``scan_terraform``.

Each case here was checked against the real terraform (see
``test_tf_differential.py``, which runs them through both binaries)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.engine.scan.terraform import scan_terraform
from dreamlake.engine.world.paths import ProviderPaths
from dreamlake.engine.world.vendors import Decision, Template


def scan(tmp_path: Path, variables: str, tfvars: str) -> list[tuple[str, str | None]]:
    d = tmp_path / "prov"
    (d / "terraform").mkdir(parents=True, exist_ok=True)
    (d / "terraform" / "variables.tf").write_text(variables)
    (d / "terraform" / "terraform.tfvars").write_text(tfvars)
    dec = Decision(key="x", var="x", file="terraform/terraform.tfvars", why="pick x")
    t = Template("custom", 1, "test", ("terraform",), (), (dec,))
    return [(b.reason, b.message) for b in scan_terraform(ProviderPaths(d), t)]


def variable(type_: str, condition: str) -> str:
    return (
        f'variable "x" {{\n  type = {type_}\n  validation {{\n'
        f'    condition     = {condition}\n    error_message = "Refused."\n  }}\n}}\n'
    )


OBJ = "object({ name = string, size = optional(number, 10), mode = optional(string) })"


@pytest.mark.parametrize(
    ("type_", "condition", "value", "blocked"),
    [
        # optional attributes: missing ones are null, defaults applied
        (OBJ, "var.x.size >= 10", '{ name = "a" }', False),
        (OBJ, "var.x.size >= 10", '{ name = "a", size = null }', False),
        (OBJ, "var.x.size >= 10", '{ name = "a", size = 9 }', True),
        (OBJ, "var.x.mode == null", '{ name = "a" }', False),
        (OBJ, "var.x.mode == null", '{ name = "a", mode = "m" }', True),
        # a required attribute missing is a type error
        (OBJ, "true", "{ size = 1 }", True),
        # strings converted by the declared type as terraform does
        ("number", "var.x > 0", '"7"', False),
        ("number", "var.x > 0", '" 7"', True),
        ("number", "var.x > 0", '"1_0"', True),
        ("bool", "var.x", '"1"', False),
        ("bool", "var.x", '"True"', True),
        # both sides of && and || are evaluated: an error on either fails
        ("string", 'var.x == "" || length(regex("^[a-z]+$", var.x)) > 0', '""', True),
        # RE2's ASCII \\d and \\w
        ("string", 'can(regex("^\\\\d+$", var.x))', '"١٢"', True),
        ("string", 'can(regex("^\\\\w+$", var.x))', '"été"', True),
        # length() counts grapheme clusters after NFC
        ("string", "length(var.x) == 1", '"e\\u0301"', False),
        # leading zeros in IPv4 octets are decimal
        ("string", "can(cidrhost(var.x, 0))", '"010.0.0.0/8"', False),
        # regex() converts a number; contains() refuses null
        ("number", 'can(regex("^[0-9]+$", var.x))', "12", False),
        ("string", 'can(contains(["a"], var.x == "z" ? null : var.x))', '"z"', True),
        # Go's upper() keeps ß (Python's makes it SS)
        ("string", 'upper(var.x) == "STRASSE"', '"straße"', True),
        # RE2 reads a{,3} literally
        ("string", 'can(regex("a{,3}", var.x))', '"a"', True),
    ],
)
def test_verdicts_follow_terraform(
    tmp_path: Path, type_: str, condition: str, value: str, blocked: bool
) -> None:
    got = scan(tmp_path, variable(type_, condition), f"x = {value}\n")
    assert bool(got) is blocked, got
    assert all(reason == "invalid" for reason, _ in got)


@pytest.mark.parametrize(
    ("type_", "condition", "value"),
    [
        # judged differently by terraform 1.0 (the value as written) and 1.11
        ("number", "floor(var.x) == var.x", '"4"'),
        ("list(string)", 'var.x == ["a"]', '["a"]'),
        # Go's upper() of ᾳ is a single rune this scan does not model
        ("string", "upper(var.x) == var.x", '"ᾳ"'),
        # look-ahead is not RE2
        ("string", 'can(regex("^a(?=b)", var.x))', '"ac"'),
        # a function the scan does not implement
        ("string", 'can(formatdate("YYYY", var.x))', '"nope"'),
    ],
)
def test_what_the_scan_cannot_judge_is_not_blocking(
    tmp_path: Path, type_: str, condition: str, value: str
) -> None:
    assert scan(tmp_path, variable(type_, condition), f"x = {value}\n") == []
