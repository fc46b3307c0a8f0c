"""Map terraform's variable diagnostics onto the template's decisions.

The summaries (exact strings, stable since 0.15):

* ``No value for required variable`` / ``Required variable not set`` → ``unset``
* ``Invalid value for variable`` (a ``validation`` block failed) → ``invalid``,
  ``message`` = the validation's ``error_message``
* ``Invalid value for input variable`` (wrong type) → ``invalid``

Each becomes one ``Blocking`` keyed by the decision whose ``var`` it names
(``Decision.var``), pointing at the decision's file (absolute) and the line of the
variable there. A variable no decision names keeps its own name as the key and
points at ``terraform/terraform.tfvars``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ...contract.result import Blocking, BlockingReason
from ...world.vendors import Template

UNSET_SUMMARIES = frozenset({"No value for required variable", "Required variable not set"})
INVALID_SUMMARIES = frozenset({"Invalid value for variable", "Invalid value for input variable"})
VARIABLE_SUMMARIES = UNSET_SUMMARIES | INVALID_SUMMARIES

_DETAIL_VAR = re.compile(r'(?:variable "([\w-]+)"|var\.([\w-]+))')
_DECL_VAR = re.compile(r'variable\s+"([\w-]+)"')
_TRAVERSAL = re.compile(r"^var\.([\w-]+)")
_CHECKED_BY = "\n\nThis was checked by the validation rule at"


def is_variable_diagnostic(d: Mapping[str, Any]) -> bool:
    return str(d.get("summary", "")).strip() in VARIABLE_SUMMARIES


def variable_name(d: Mapping[str, Any], tf_dir: Path | None = None) -> str | None:
    """The variable a diagnostic is about, from its snippet, detail or range."""
    snippet = d.get("snippet") or {}
    for v in snippet.get("values") or []:
        m = _TRAVERSAL.match(str(v.get("traversal", "")))
        if m:
            return m.group(1)
    m = _DECL_VAR.search(str(snippet.get("code") or ""))
    if m:
        return m.group(1)
    m = _DETAIL_VAR.search(str(d.get("detail") or ""))
    if m:
        return m.group(1) or m.group(2)
    # A range in a tfvars file: the assignment on that line names the variable.
    rng = d.get("range") or {}
    fname, line = rng.get("filename"), (rng.get("start") or {}).get("line")
    if tf_dir is not None and fname and line:
        try:
            text = (tf_dir / fname).read_text(encoding="utf-8").splitlines()[int(line) - 1]
        except (OSError, IndexError, ValueError):
            return None
        m = re.match(r"\s*([\w-]+)\s*=", text)
        if m:
            return m.group(1)
    return None


def validation_message(d: Mapping[str, Any]) -> str | None:
    detail = str(d.get("detail") or "").strip()
    if not detail:
        return None
    return detail.split(_CHECKED_BY, 1)[0].strip() or None


def tfvars_line(path: Path, var: str) -> int | None:
    """The 1-based line assigning ``var`` in a tfvars file, or its commented-out
    placeholder (``# var = ...``)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    assign = re.compile(rf"^\s*{re.escape(var)}\s*=")
    commented = re.compile(rf"^\s*(?:#|//)\s*{re.escape(var)}\s*=")
    for pattern in (assign, commented):
        for i, text in enumerate(lines, start=1):
            if pattern.match(text):
                return i
    return None


def blocking_from_diagnostics(
    diagnostics: Iterable[Mapping[str, Any]],
    *,
    provider_dir: Path,
    template: Template | None,
    tf_dir: Path | None = None,
) -> list[Blocking] | None:
    """One Blocking per variable, or None when any error is not about a variable
    (then the run is an error, not a question)."""
    tf = tf_dir or provider_dir / "terraform"
    diags = list(diagnostics)
    if not diags or not all(is_variable_diagnostic(d) for d in diags):
        return None
    out: dict[str, Blocking] = {}
    for d in diags:
        var = variable_name(d, tf)
        if var is None:
            return None
        summary = str(d.get("summary", "")).strip()
        reason: BlockingReason = "unset" if summary in UNSET_SUMMARIES else "invalid"
        decision = next((x for x in template.decisions if x.var == var), None) if template else None
        if decision is not None:
            key, file, why = decision.key, (provider_dir / decision.file).absolute(), decision.why
        else:
            key, file, why = var, (tf / "terraform.tfvars").absolute(), None
        line = tfvars_line(file, var)
        rng = d.get("range") or {}
        if line is None and str(rng.get("filename", "")).endswith((".tfvars", ".tfvars.json")):
            line = (rng.get("start") or {}).get("line")
        message = validation_message(d) if reason == "invalid" else None
        if key in out:
            continue
        out[key] = Blocking(
            key=key,
            reason=reason,
            file=str(file),
            line=line,
            why=why or None,
            message=message,
        )
    return list(out.values())
