"""Read ``*.tfvars`` values and ``variable`` blocks with python-hcl2, as plain values.

python-hcl2 (8.x) keeps HCL source for strings and expressions: ``"x"`` comes back
as ``'"x"'`` (quotes and escapes included) and an expression as ``'${...}'``.
:func:`decode` turns those into Python values, evaluating what it can with
:mod:`.hcl_eval`; what it cannot becomes :data:`OPAQUE` (set, but not judged).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract.commands import create_continue
from ..contract.errors import DreamlakeError
from ..contract.result import EditThenContinue
from .expr.values import Respelled, make_number, nfc, parse_number
from .hcl_eval import EvalError, Unevaluable, evaluate, parse, parse_template
from .lines import KeyLines, hcl_key_lines, json_key_lines


class _Opaque:
    def __repr__(self) -> str:
        return "OPAQUE"


OPAQUE: Any = _Opaque()
"""A value that is set but that the scan cannot compute (left for plan)."""

_NUMBER_RE = re.compile(r"(?<![\w.])([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_VARIABLE_BLOCK_RE = re.compile(r"^\s*variable\s", re.M)
_HEREDOC_RE = re.compile(r"\A<<(-?)([A-Za-z_][A-Za-z0-9_]*)\n(.*?)\n?[ \t]*\2\Z", re.S)


def _decode_heredoc(raw: str) -> Any:
    m = _HEREDOC_RE.match(raw)
    if not m:
        return OPAQUE
    body = m.group(3)
    lines = body.split("\n")
    if m.group(1):
        indents = [len(ln) - len(ln.lstrip(" \t")) for ln in lines if ln.strip()]
        cut = min(indents, default=0)
        lines = [ln[cut:] for ln in lines]
    text = "\n".join(lines) + "\n"
    if "${" in text or "%{" in text:
        return OPAQUE
    return text


def _decimal(value: float) -> Any:
    """A float python-hcl2 parsed, as the exact decimal it was written as; one
    with more digits than a float holds may have lost some, so is not judged."""
    digits = repr(value).split("e")[0].replace("-", "").replace(".", "").strip("0")
    if len(digits) >= 15 or not math.isfinite(value):
        return OPAQUE
    try:
        number = make_number(value)
    except Unevaluable:
        return OPAQUE
    return Respelled(number) if isinstance(number, int) else number


def _json_value(value: Any) -> Any:
    """A ``.tfvars.json`` value with Terraform's kinds: exact numbers, NFC strings."""
    if isinstance(value, str):
        # HCL reads a JSON string as a template: "${...}" is not literal text
        return OPAQUE if ("${" in value or "%{" in value) else nfc(value)
    if isinstance(value, list):
        items = [_json_value(v) for v in value]
        return OPAQUE if any(v is OPAQUE for v in items) else items
    if isinstance(value, dict):
        out = {nfc(k): _json_value(v) for k, v in value.items()}
        return OPAQUE if any(v is OPAQUE for v in out.values()) else out
    return value


def _json_number(text: str) -> Any:
    try:
        number = parse_number(text)
    except (Unevaluable, EvalError):
        return OPAQUE
    whole = text.lstrip("-").isdigit()
    return Respelled(number) if isinstance(number, int) and not whole else number


def _has_call(node: Any) -> bool:
    if isinstance(node, tuple):
        if node and node[0] == "call":
            return True
        return any(_has_call(part) for part in node)
    if isinstance(node, list):
        return any(_has_call(part) for part in node)
    return False


def _constant(node: Any) -> Any:
    """A variable file's expression evaluated; Terraform allows no function calls
    there, so one makes the value :data:`OPAQUE` (plan reports it)."""
    if _has_call(node):
        return OPAQUE
    return evaluate(node)


def _floats_exact(text: str) -> bool:
    """Whether every number in ``text`` survives python-hcl2's float intact."""
    return not any(
        len(m.group(1).replace(".", "").strip("0")) > 15 for m in _NUMBER_RE.finditer(text)
    )


def decode(value: Any, exact_floats: bool = True) -> Any:
    """A python-hcl2 value as a plain Python value (or :data:`OPAQUE`)."""
    if isinstance(value, str):
        try:
            if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
                inner = value[1:-1]
                if inner.startswith("<<"):
                    return _decode_heredoc(inner)
                return _constant(parse_template(inner))
            if value.startswith("${") and value.endswith("}"):
                return _constant(parse(value[2:-1]))
            return _constant(parse(value))
        except (Unevaluable, EvalError):
            return OPAQUE
    if isinstance(value, float):
        return _decimal(value) if exact_floats else OPAQUE
    if isinstance(value, list):
        items = [decode(v, exact_floats) for v in value]
        return OPAQUE if any(v is OPAQUE for v in items) else items
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, str) and k.startswith("__") and k.endswith("__"):
                continue
            key = decode(k) if isinstance(k, str) and k.startswith('"') else k
            dv = decode(v, exact_floats)
            if key is OPAQUE or dv is OPAQUE:
                return OPAQUE
            out[str(key)] = dv
        return out
    return value


def unquote(name: str) -> str:
    """A block label as python-hcl2 gives it (``'"region"'``) without its quotes."""
    return name[1:-1] if len(name) >= 2 and name[0] == name[-1] == '"' else name


def _syntax_error(path: Path, line: int | None, detail: str, provider: str) -> DreamlakeError:
    where = f"{path}:{line}" if line else str(path)
    return DreamlakeError(
        f"{where}: {path.name} does not parse: {detail}. Fix the syntax, then continue.",
        kind="tfvars_syntax",
        next_action=EditThenContinue(file=str(path), command=create_continue(provider)),
    )


def _describe(e: Exception) -> str:
    """A parser error in words (lark's own text lists grammar terminals)."""
    token = getattr(e, "token", None)
    col = getattr(e, "column", None)
    at = f" at column {col}" if isinstance(col, int) and col > 0 else ""
    if token is not None:
        if getattr(token, "type", "") == "$END":
            return "the file ends in the middle of a value (an unclosed bracket or string?)"
        return f"unexpected {str(token).strip()!r}{at}"
    char = getattr(e, "char", None)
    if isinstance(char, str):
        return f"unexpected character {char!r}{at}"
    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    return re.sub(r"\s+at line \d+, column \d+\.?$", "", first)


@dataclass
class VarFile:
    """One variable-definitions file: its values and where each key sits."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)
    lines: KeyLines = field(default_factory=KeyLines)
    exists: bool = True


def read_var_file(path: Path, provider: str) -> VarFile:
    """Read a ``.tfvars`` or ``.tfvars.json`` file. A missing file reads as empty;
    one that does not parse raises ``DreamlakeError(kind="tfvars_syntax")``."""
    from ..settings.readers import FileProblem, check_json_depth, read_text

    try:
        text = read_text(path)
    except FileNotFoundError:
        return VarFile(path, exists=False)
    except FileProblem as e:
        raise _syntax_error(path, None, e.reason, provider) from None
    except (OSError, UnicodeDecodeError) as e:
        raise _syntax_error(path, None, f"cannot be read ({e})", provider) from None
    if path.name.endswith(".json"):
        try:
            check_json_depth(text, path)
            data = (
                json.loads(text, parse_float=_json_number, parse_int=_json_number)
                if text.strip()
                else {}
            )
        except json.JSONDecodeError as e:
            raise _syntax_error(path, e.lineno, e.msg, provider) from None
        except FileProblem as e:
            raise _syntax_error(path, None, e.reason, provider) from None
        if not isinstance(data, dict):
            raise _syntax_error(path, 1, "the top level must be an object", provider)
        jlines = json_key_lines(text)
        if jlines.repeated:
            key, twice = min(jlines.repeated.items(), key=lambda kv: kv[1])
            raise _syntax_error(
                path,
                twice,
                f'"{key}" is given twice (first on line {jlines.assigned[key]})',
                provider,
            )
        return VarFile(path, {k: _json_value(v) for k, v in data.items()}, jlines)
    from ..settings import hcl

    try:
        raw = hcl.loads(text)
    except Exception as e:  # lark raises several unrelated exception types
        at = getattr(e, "line", None)
        at_line = at if isinstance(at, int) and at > 0 else None
        raise _syntax_error(path, at_line, _describe(e), provider) from None
    # python-hcl2 reads a decimal into a float: one written with more digits than
    # a float holds (0.10000000000000001) is no longer what Terraform reads.
    exact = _floats_exact(text)
    values = {
        k: decode(v, exact) for k, v in raw.items() if not (k.startswith("__") and k.endswith("__"))
    }
    lines = hcl_key_lines(text)
    for key, line in sorted(lines.repeated.items(), key=lambda kv: kv[1]):
        raise _syntax_error(
            path,
            line,
            f"{key} is set twice (first on line {lines.assigned[key]}); each may be set only once",
            provider,
        )
    return VarFile(path, values, lines)


# ----------------------------------------------------------------- variable blocks


@dataclass
class Validation:
    condition: Any  # a parsed node, a literal, or OPAQUE
    error_message: str
    message_node: Any = None  # a template to render with the value, when it has one


@dataclass
class VariableSpec:
    name: str
    type: str | None = None
    has_default: bool = False
    default: Any = None
    validations: list[Validation] = field(default_factory=list)


def _expr_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value[2:-1] if value.startswith("${") and value.endswith("}") else value
    return None


def _validation(block: dict[str, Any]) -> Validation:
    cond_raw = block.get("condition")
    cond: Any
    if isinstance(cond_raw, bool):
        cond = ("lit", cond_raw)
    else:
        text = _expr_text(cond_raw)
        try:
            cond = parse(text) if text is not None else OPAQUE
        except (Unevaluable, EvalError):
            cond = OPAQUE
    msg_raw = block.get("error_message")
    message = ""
    node = None
    if isinstance(msg_raw, str) and msg_raw.startswith('"') and msg_raw.endswith('"'):
        try:
            node = parse_template(msg_raw[1:-1])
            if all(isinstance(p, str) for p in node[1]):
                message, node = "".join(node[1]), None
            else:
                message = msg_raw[1:-1]
        except (Unevaluable, EvalError):
            message = msg_raw[1:-1]
    elif isinstance(msg_raw, str):
        message = msg_raw
    return Validation(cond, message, node)


_VARIABLES_SEEN: dict[tuple[str, ...], dict[str, VariableSpec]] = {}
"""Declarations by the text of the files declaring them: a process that scans many
providers of one template (``provider list``) parses its variables once."""


def read_variables(tf_dir: Path) -> dict[str, VariableSpec]:
    """Every ``variable`` block in the ``*.tf`` files of ``tf_dir``. A file that
    does not parse is skipped: plan reports it, the scan only judges values."""
    from ..settings.readers import read_text

    texts: list[str] = []
    try:
        files = sorted(tf_dir.glob("*.tf"))
    except OSError:
        return {}
    for f in files:
        try:
            text = read_text(f)
        except Exception:
            continue
        if _VARIABLE_BLOCK_RE.search(text):  # parsing costs; only declaring files matter
            texts.append(text)
    key = tuple(texts)
    if key not in _VARIABLES_SEEN:
        if len(_VARIABLES_SEEN) > 64:
            _VARIABLES_SEEN.clear()
        _VARIABLES_SEEN[key] = _declared(texts)
    return _VARIABLES_SEEN[key]


def _declared(texts: list[str]) -> dict[str, VariableSpec]:
    from ..settings import hcl

    out: dict[str, VariableSpec] = {}
    for text in texts:
        try:
            data = hcl.loads(text)
        except Exception:
            continue
        for entry in data.get("variable", []):
            for label, body in entry.items():
                name = unquote(label)
                if not isinstance(body, dict):
                    continue
                spec = VariableSpec(name=name, type=_expr_text(body.get("type")))
                if "default" in body:
                    spec.has_default = True
                    spec.default = decode(body["default"], _floats_exact(text))
                for block in body.get("validation", []) or []:
                    if isinstance(block, dict):
                        spec.validations.append(_validation(block))
                out[name] = spec
    return out


__all__ = [
    "OPAQUE",
    "Validation",
    "VarFile",
    "VariableSpec",
    "decode",
    "read_var_file",
    "read_variables",
    "unquote",
]
