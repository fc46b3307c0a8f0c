"""Writing decision values into the provider's own file, the way a person would.

``terraform/terraform.tfvars`` (an HCL attribute), ``Pulumi.<stack>.yaml`` (a
``<project>:<key>`` under ``config:``) or ``adopt.json`` (a key of its object): the
one line (or the lines of a multi-line value) of that key is replaced; a key only
commented out gets its assignment right below the comment; a key absent is appended.
Everything else in the file — comments, other values, their order — stays as it was,
so a person still reviews one file.

A value given as text (the command line's ``KEY=VALUE``) is read as the variable's
declared type: ``number``, ``bool``, a list (JSON, or comma-separated), a map or
object (JSON), else a string. Checking the value is the decision scan's job, not this
module's: the verb writes, scans, and puts the file back when the scan refuses it.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any, Literal, get_args, get_origin

Kind = Literal["string", "number", "bool", "list", "json", "any"]

_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


# ----------------------------------------------------------------- typing a value


def tf_kind(type_expr: str | None) -> Kind:
    """The kind of a terraform ``type = ...`` expression."""
    t = (type_expr or "").replace(" ", "")
    if t == "string":
        return "string"
    if t == "number":
        return "number"
    if t == "bool":
        return "bool"
    if t.startswith(("list(", "set(", "tuple(")) or t in ("list", "set"):
        return "list"
    if t.startswith(("map(", "object(")) or t == "map":
        return "json"
    return "any"


def model_kind(annotation: Any) -> Kind:
    """The kind of a pydantic config model field's annotation."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    origin = get_origin(annotation)
    if origin is Literal:
        return "string"
    if origin is not None and origin not in (list, dict, tuple, set) and args:
        return model_kind(args[0])  # Optional[X], X | None
    base = origin or annotation
    if base is bool:
        return "bool"
    if base in (int, float):
        return "number"
    if base is str:
        return "string"
    if base in (list, tuple, set):
        return "list"
    if base is dict:
        return "json"
    return "any"


def value_kind(value: Any) -> Kind:
    """The kind of a value already in a file (adopt.json has no declared types)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "json"
    if isinstance(value, str):
        return "string"
    return "any"


def coerce(raw: Any, kind: Kind) -> Any:
    """``raw`` as ``kind``. Text that is not of the kind stays text: the scan then
    says why it is invalid, in its own words."""
    if not isinstance(raw, str):
        return raw
    if kind == "string":
        return raw
    if kind == "number":
        try:
            return int(raw)
        except ValueError:
            pass
        try:
            f = float(raw)
        except ValueError:
            return raw
        return f if math.isfinite(f) else raw
    if kind == "bool":
        low = raw.strip().lower()
        return {"true": True, "false": False}.get(low, raw)
    if kind == "list":
        if raw.lstrip().startswith("["):
            return _json_or(raw)
        return [part.strip() for part in raw.split(",") if part.strip()]
    if kind == "json":
        return _json_or(raw)
    if raw.lstrip().startswith(("[", "{")):
        return _json_or(raw)
    return raw


def _json_or(raw: str) -> Any:
    from ..settings.readers import FileProblem, check_json_depth

    try:
        check_json_depth(raw, None)
        return json.loads(raw)
    except (ValueError, FileProblem):
        return raw


# ----------------------------------------------------------------- literals


def hcl_literal(value: Any) -> str:
    """``value`` as an HCL expression on one line (strings never interpolate)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return json.dumps(value if not isinstance(value, Decimal) else float(value))
    if isinstance(value, str):
        out = json.dumps(value, ensure_ascii=False)
        return out.replace("${", "$${").replace("%{", "%%{")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(hcl_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        items = [
            f"{k if _IDENT_RE.match(str(k)) else hcl_literal(str(k))} = {hcl_literal(v)}"
            for k, v in value.items()
        ]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    raise TypeError(f"cannot write a {type(value).__name__} into a variable file")


def yaml_literal(value: Any) -> str:
    """``value`` as a YAML flow scalar or collection (JSON is valid YAML)."""
    return json.dumps(value, ensure_ascii=False)


# ----------------------------------------------------------------- editing text


def set_tfvars(text: str, var: str, value: Any) -> str:
    """``text`` of a ``.tfvars`` file with ``var = value``."""
    from .lines import hcl_assignment_spans, hcl_inline_comment, hcl_key_lines

    literal = f"{var} = {hcl_literal(value)}"
    lines = text.splitlines(keepends=True)
    span = hcl_assignment_spans(text).get(var)
    if span is not None:
        start, end = span
        first = lines[start - 1].rstrip("\r\n")
        indent = first[: len(first) - len(first.lstrip())]
        comment = hcl_inline_comment(first) if start == end else None
        tail = f"  {comment}" if comment else ""
        lines[start - 1 : end] = [f"{indent}{literal}{tail}\n"]
        return "".join(lines)
    commented = hcl_key_lines(text).commented.get(var)
    if commented is not None:
        lines.insert(commented, f"{literal}\n")
        if commented == len(lines) - 1 and not lines[commented - 1].endswith("\n"):
            lines[commented - 1] += "\n"
        return "".join(lines)
    sep = "" if not text or text.endswith("\n") else "\n"
    return f"{text}{sep}{literal}\n"


def set_stack_yaml(text: str, project: str, key: str, value: Any) -> str:
    """``text`` of a ``Pulumi.<stack>.yaml`` with ``<project>:<key>: value`` under
    ``config:``."""
    name = f"{project}:{key}"
    entry = f"{name}: {yaml_literal(value)}"
    lines = text.splitlines(keepends=True)
    key_re = re.compile(rf"^(\s+){re.escape(name)}\s*:(\s|$)")
    for i, raw in enumerate(lines):
        m = key_re.match(raw)
        if not m:
            continue
        indent = m.group(1)
        end = i + 1  # the lines of a block value below the key are more indented
        while end < len(lines):
            nxt = lines[end].rstrip("\r\n")
            if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= len(indent):
                break
            end += 1
        while end > i + 1 and not lines[end - 1].strip():
            end -= 1  # blank lines after the value belong to the file, not to it
        lines[i:end] = [f"{indent}{entry}\n"]
        return "".join(lines)
    commented_re = re.compile(rf"^(\s*)#\s*{re.escape(name)}\s*:")
    for i, raw in enumerate(lines):
        m = commented_re.match(raw)
        if m:
            indent = m.group(1) or "  "
            if not raw.endswith("\n"):
                lines[i] = raw + "\n"
            lines.insert(i + 1, f"{indent}{entry}\n")
            return "".join(lines)
    for i, raw in enumerate(lines):
        if re.match(r"^config\s*:\s*(\{\s*\})?\s*(#.*)?$", raw.rstrip("\r\n")):
            if "{" in raw:
                lines[i] = "config:\n"
            lines.insert(i + 1, f"  {entry}\n")
            return "".join(lines)
    sep = "" if not text or text.endswith("\n") else "\n"
    return f"{text}{sep}config:\n  {entry}\n"


def set_adopt(text: str, key: str, value: Any) -> str:
    """``text`` of ``adopt.json`` with ``key`` set (the other keys, in their order)."""
    data = json.loads(text) if text.strip() else {}
    if not isinstance(data, dict):
        raise ValueError("the top level must be a JSON object")
    data[key] = value
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


__all__ = [
    "Kind",
    "coerce",
    "hcl_literal",
    "model_kind",
    "set_adopt",
    "set_stack_yaml",
    "set_tfvars",
    "tf_kind",
    "value_kind",
    "yaml_literal",
]
