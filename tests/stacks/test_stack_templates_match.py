"""Every config model matches its vendor's terraform template: one field per
variable (decisions under their decision key), the same defaults, the same
required-ness, and every ``validation`` block's error message raised verbatim."""

from __future__ import annotations

import ast
import contextlib
import json
from importlib import import_module, resources
from typing import Any

import hcl2
import pytest
from dreamlake.engine.world.vendors import get_template
from dreamlake.stacks import VENDORS


def _unquote(value: Any) -> Any:
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return json.loads(value)
    if isinstance(value, list):
        return [_unquote(v) for v in value]
    if isinstance(value, dict):
        return {k: _unquote(v) for k, v in value.items()}
    return value


def _variables(vendor: str) -> dict[str, dict[str, Any]]:
    text = get_template(vendor).root.joinpath("terraform", "variables.tf").read_text()
    out: dict[str, dict[str, Any]] = {}
    for block in hcl2.loads(text).get("variable", []):
        for name, body in block.items():
            out[name.strip('"')] = body
    return out


def _messages(vendor: str) -> set[str]:
    """Every string the program can raise: constants and evaluated f-strings."""
    folder = resources.files("dreamlake.stacks").joinpath(vendor)
    out: set[str] = set()
    for path in folder.iterdir():  # the program and its vendor's own modules
        if not path.name.endswith(".py") or path.name == "__init__.py":
            continue
        mod = import_module(f"dreamlake.stacks.{vendor}.{path.name.removesuffix('.py')}")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.add(node.value)
            elif isinstance(node, ast.JoinedStr):
                # one that uses a local name is not a validation message
                with contextlib.suppress(NameError):
                    out.add(eval(compile(ast.Expression(node), "<f>", "eval"), vars(mod)))
    return out


@pytest.mark.parametrize("vendor", VENDORS)
def test_model_matches_variables_tf(vendor: str) -> None:
    template = get_template(vendor)
    by_var = {d.var: d.key for d in template.decisions}
    fields = import_module(f"dreamlake.stacks.{vendor}").Config.model_fields
    messages = _messages(vendor)
    for var, body in _variables(vendor).items():
        key = by_var.get(var, var)
        assert key in fields, f"{vendor}: variable {var} has no field {key}"
        field = fields[key]
        if "default" in body:
            default = _unquote(body["default"])
            assert not field.is_required(), f"{vendor}.{key} must have a default"
            assert field.get_default(call_default_factory=True) == default, (
                f"{vendor}.{key}: default {field.get_default()!r} != terraform {default!r}"
            )
        else:
            assert field.is_required(), f"{vendor}.{key} has no default in terraform"
        for validation in body.get("validation", []):
            message = _unquote(validation["error_message"])
            assert message in messages, f"{vendor}.{key}: no validator raises {message!r}"
