"""The Terraform decision scan: ``terraform.tfvars`` against ``TEMPLATE.json``.

For each decision, read ``var`` from the decision's file and report a
:class:`Blocking` when it is

* ``unset`` — absent, ``null`` or only commented out;
* ``conflict`` — set to different values in the decision's file and another
  variable file Terraform loads automatically (``terraform.tfvars.json``,
  ``*.auto.tfvars``, ``*.auto.tfvars.json`` in the same folder);
* ``placeholder`` — still the template's placeholder (see :mod:`.placeholder`);
* ``invalid`` — not of the variable's type, or failing one of the variable's own
  ``validation`` blocks in ``*.tf``. A condition :mod:`.hcl_eval` cannot
  evaluate is left for ``terraform plan``.

Offline and pure over the files: no terraform binary, no network.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..contract import Blocking
from ..paths import ProviderPaths
from ..vendors import Decision, Template
from .hcl_eval import EvalError, Evaluator, Unevaluable, equal
from .placeholder import is_placeholder
from .tfvars import OPAQUE, VarFile, VariableSpec, read_var_file, read_variables


class _TypeMismatch(Exception):
    pass


_COLLECTION_RE = re.compile(r"^\s*(list|set|map)\s*\((.*)\)\s*$", re.S)


def convert(value: Any, type_expr: str | None) -> Any:
    """Convert a tfvars value to a variable's declared type, as Terraform would.

    Types this does not model (object, tuple, optional attributes) pass the
    value through unchanged."""
    if value is OPAQUE or value is None or not type_expr:
        return value
    t = type_expr.strip()
    if t == "any":
        return value
    if t == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(int(value)) if float(value).is_integer() else repr(value)
        if isinstance(value, str):
            return value
        raise _TypeMismatch("a string")
    if t == "number":
        if isinstance(value, bool):
            raise _TypeMismatch("a number")
        if isinstance(value, int | float):
            return value
        if isinstance(value, str):
            try:
                f = float(value.strip())
            except ValueError:
                raise _TypeMismatch("a number") from None
            return int(f) if f.is_integer() else f
        raise _TypeMismatch("a number")
    if t == "bool":
        if isinstance(value, bool):
            return value
        if value in ("true", "false"):
            return value == "true"
        raise _TypeMismatch("a bool")
    m = _COLLECTION_RE.match(t)
    if m:
        kind, inner = m.group(1), m.group(2)
        if kind in ("list", "set"):
            if not isinstance(value, list):
                raise _TypeMismatch(f"a {kind} ({t})")
            items = [convert(v, inner) for v in value]
            if kind == "set":
                dedup: list[Any] = []
                for v in items:
                    if v not in dedup:
                        dedup.append(v)
                items = dedup
            return items
        if not isinstance(value, dict):
            raise _TypeMismatch(f"a map ({t})")
        return {k: convert(v, inner) for k, v in value.items()}
    return value


def _render(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _var_files(tf_dir: Path, decision_file: Path, provider: str) -> list[VarFile]:
    """The files Terraform loads values from, in its order (later wins)."""
    ordered: list[Path] = [tf_dir / "terraform.tfvars", tf_dir / "terraform.tfvars.json"]
    try:
        autos = sorted(
            p
            for p in tf_dir.iterdir()
            if p.is_file()
            and (p.name.endswith(".auto.tfvars") or p.name.endswith(".auto.tfvars.json"))
        )
    except OSError:
        autos = []
    ordered.extend(autos)
    if decision_file not in ordered:
        ordered.insert(0, decision_file)
    return [read_var_file(p, provider) for p in ordered]


class _Scanner:
    def __init__(self, paths: ProviderPaths) -> None:
        self.paths = paths
        self._files: dict[Path, list[VarFile]] = {}
        self._vars: dict[Path, dict[str, VariableSpec]] = {}

    def files(self, decision_file: Path) -> list[VarFile]:
        key = decision_file
        if key not in self._files:
            self._files[key] = _var_files(decision_file.parent, decision_file, self.paths.name)
        return self._files[key]

    def variables(self, tf_dir: Path) -> dict[str, VariableSpec]:
        if tf_dir not in self._vars:
            self._vars[tf_dir] = read_variables(tf_dir)
        return self._vars[tf_dir]

    def scan(self, d: Decision) -> Blocking | None:
        decision_file = (self.paths.dir / d.file).absolute()
        files = self.files(decision_file)
        own = next(f for f in files if f.path == decision_file)
        why = d.why or None

        def blocking(reason: str, vf: VarFile, message: str | None = None) -> Blocking:
            line = vf.lines.line_of(d.var) if vf.exists else None
            return Blocking(
                key=d.key,
                reason=reason,  # type: ignore[arg-type]
                file=str(vf.path),
                line=line,
                why=why,
                message=message,
            )

        settings = [(f, f.values[d.var]) for f in files if d.var in f.values]
        non_null = [(f, v) for f, v in settings if v is not None]
        if not non_null:
            return blocking("unset", own)

        conflict = self._conflict(d, own, non_null)
        if conflict:
            return conflict

        source, value = non_null[-1]
        if is_placeholder(value, d.placeholder):
            return blocking(
                "placeholder",
                source,
                f"still the template's placeholder {_render(value)}",
            )
        if value is OPAQUE:
            return None

        tf_dir = decision_file.parent
        specs = self.variables(tf_dir)
        spec = specs.get(d.var)
        if spec is None:
            return None
        try:
            value = convert(value, spec.type)
        except _TypeMismatch as e:
            return blocking("invalid", source, f"{d.var} must be {e}, got {_render(value)}.")
        message = self._failed_validation(spec, value, specs, files)
        if message is not None:
            return blocking("invalid", source, message)
        return None

    def _conflict(
        self, d: Decision, own: VarFile, settings: list[tuple[VarFile, Any]]
    ) -> Blocking | None:
        if len(settings) < 2:
            return None
        first_file, first = settings[0]
        for other_file, other in settings[1:]:
            if not equal(other, first):
                a_line = first_file.lines.line_of(d.var)
                b_line = other_file.lines.line_of(d.var)
                where_a = f"{first_file.path.name}" + (f" line {a_line}" if a_line else "")
                where_b = f"{other_file.path.name}" + (f" line {b_line}" if b_line else "")
                return Blocking(
                    key=d.key,
                    reason="conflict",
                    file=str(other_file.path),
                    line=b_line,
                    why=d.why or None,
                    message=(
                        f"set to {_render(first)} in {where_a} but to {_render(other)} in "
                        f"{where_b}, which Terraform loads later and which wins. "
                        "Keep one value and delete the other."
                    ),
                )
        return None

    def _failed_validation(
        self,
        spec: VariableSpec,
        value: Any,
        specs: dict[str, VariableSpec],
        files: list[VarFile],
    ) -> str | None:
        known: dict[str, Any] = {}
        for name, other in specs.items():
            if other.has_default and other.default is not OPAQUE:
                known[name] = other.default
        for f in files:
            for name, v in f.values.items():
                if v is not OPAQUE and v is not None:
                    try:
                        known[name] = convert(v, specs[name].type) if name in specs else v
                    except _TypeMismatch:
                        known.pop(name, None)
        known[spec.name] = value
        ev = Evaluator({"var": known})
        for validation in spec.validations:
            if validation.condition is OPAQUE:
                continue
            try:
                ok = ev.run(validation.condition)
            except Unevaluable:
                continue
            except EvalError:
                ok = False
            if ok is False:
                return self._message(ev, spec, validation.error_message, validation.message_node)
        return None

    @staticmethod
    def _message(ev: Evaluator, spec: VariableSpec, text: str, node: Any) -> str:
        if node is not None:
            try:
                return str(ev.run(node))
            except (Unevaluable, EvalError):
                pass
        return text or f"{spec.name} fails its validation."


def scan_terraform(paths: ProviderPaths, template: Template) -> list[Blocking]:
    """Every decision of ``template`` the provider's variable files do not settle.

    Raises ``DreamlakeError(kind="tfvars_syntax")`` when a variable file does not
    parse."""
    scanner = _Scanner(paths)
    out: list[Blocking] = []
    for d in template.decisions:
        b = scanner.scan(d)
        if b is not None:
            out.append(b)
    return out


__all__ = ["convert", "scan_terraform"]
