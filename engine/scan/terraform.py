"""The Terraform decision scan: ``terraform.tfvars`` against ``TEMPLATE.json``.

For each decision, read ``var`` from the decision's file and report a
:class:`Blocking` when it is

* ``unset`` — absent, ``null`` or only commented out;
* ``conflict`` — set to different values in the decision's file and another
  variable file Terraform loads automatically (``terraform.tfvars.json``,
  ``*.auto.tfvars``, ``*.auto.tfvars.json`` in the same folder);
* ``placeholder`` — still the template's placeholder (see :mod:`.placeholder`);
* ``invalid`` — not of the variable's type (converted as Terraform converts
  it, see :mod:`.expr.types`), or failing one of the variable's own
  ``validation`` blocks in ``*.tf``. A value or condition the scan cannot judge
  for certain, or that terraform 1.0 and later versions judge differently, is
  left for ``terraform plan``: never blocking.

Offline and pure over the files: no terraform binary, no network.
"""

from __future__ import annotations

import contextlib
import functools
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..contract.result import Blocking
from ..world.paths import ProviderPaths
from ..world.vendors import Decision, Template
from .expr.types import TypeMismatch, parse_type
from .expr.types import convert as convert_to
from .expr.values import to_bool
from .hcl_eval import EvalError, Evaluator, Unevaluable, equal
from .placeholder import is_placeholder
from .tfvars import OPAQUE, VarFile, VariableSpec, read_var_file, read_variables


def convert(value: Any, type_expr: str | None) -> Any:
    """A variable-file value converted to a variable's declared type, as Terraform
    converts it (see :mod:`.expr.types`).

    Raises :class:`TypeMismatch` where Terraform refuses the value and
    :class:`Unevaluable` where the outcome is not modelled."""
    if value is OPAQUE:
        raise Unevaluable("a value the scan cannot compute")
    if value is None or not type_expr:
        return value
    return convert_to(value, _type(type_expr))


@functools.lru_cache(maxsize=256)
def _type(type_expr: str) -> Any:
    return parse_type(type_expr)


def _json_default(v: Any) -> Any:
    if isinstance(v, Decimal):
        return float(v)
    raise TypeError(type(v).__name__)


def _render(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=_json_default)
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
        message = judge(spec, value, specs, files)
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
            try:
                same = equal(other, first)
            except Unevaluable:
                same = True  # the scan cannot tell them apart; plan will
            if not same:
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


def _referenced(node: Any, out: set[str]) -> set[str]:
    """The ``var.NAME`` names a parsed condition reads."""
    if isinstance(node, tuple):
        if len(node) == 3 and node[0] == "attr" and node[1] == ("ref", "var"):
            out.add(node[2])
        for part in node:
            _referenced(part, out)
    elif isinstance(node, list):
        for part in node:
            _referenced(part, out)
    return out


def _known(names: set[str], specs: dict[str, VariableSpec], files: list[VarFile]) -> dict[str, Any]:
    """The values of the variables ``names`` as Terraform would see them, where
    the scan can tell."""
    raw: dict[str, Any] = {}
    for name in names:
        other = specs.get(name)
        if other is not None and other.has_default and other.default is not OPAQUE:
            raw[name] = other.default
        for f in files:
            v = f.values.get(name)
            if v is not OPAQUE and v is not None:
                raw[name] = v
    out: dict[str, Any] = {}
    for name, v in raw.items():
        with contextlib.suppress(TypeMismatch, Unevaluable):
            out[name] = convert(v, specs[name].type) if name in specs else v
    return out


def judge(
    spec: VariableSpec, value: Any, specs: dict[str, VariableSpec], files: list[VarFile]
) -> str | None:
    """Why Terraform would refuse ``value`` for ``spec``, or ``None`` when it would
    accept it or when the scan cannot tell (then ``terraform plan`` judges)."""
    return verdict(spec, value, specs, files)[1]


def verdict(
    spec: VariableSpec, value: Any, specs: dict[str, VariableSpec], files: list[VarFile]
) -> tuple[str, str | None]:
    """``("valid", None)``, ``("invalid", why)`` or ``("unknown", None)``: what
    Terraform would say of ``value`` for ``spec`` (its type, then each of its
    ``validation`` blocks), where the scan can tell.

    Terraform 1.0 runs the conditions on the value as written in the file, later
    versions on the value converted to the declared type (``"3"`` or ``3``,
    ``["a", "a"]`` or a set of one). The scan does not know which binary will
    run, so where the two readings disagree it leaves the value to plan."""
    try:
        converted = convert(value, spec.type)
    except TypeMismatch as e:
        return "invalid", f"{spec.name} must be {e} ({spec.type}), got {_render(value)}."
    except Unevaluable:
        return "unknown", None
    names: set[str] = set()
    for validation in spec.validations:
        _referenced(validation.condition, names)
        _referenced(validation.message_node, names)
    names.discard(spec.name)
    known = _known(names, specs, files)
    as_converted = _conditions(spec, converted, known)
    if as_converted[0] == "unknown":
        return as_converted
    if "optional(" in (spec.type or ""):
        return as_converted  # optional() needs terraform 1.3, which judges converted values
    as_written = _conditions(spec, value, known)
    if as_written[0] != as_converted[0]:
        return "unknown", None
    return as_converted


def _conditions(spec: VariableSpec, value: Any, known: dict[str, Any]) -> tuple[str, str | None]:
    ev = Evaluator({"var": {**known, spec.name: value}})
    unsure = False
    for validation in spec.validations:
        if validation.condition is OPAQUE:
            unsure = True
            continue
        try:
            ok = ev.run(validation.condition)
        except Unevaluable:
            unsure = True
            continue
        except EvalError:
            ok = False
        if ok is None:
            ok = False  # a null condition is an error in Terraform
        if not isinstance(ok, bool):
            try:
                ok = to_bool(ok)
            except EvalError:
                ok = False
        if ok is False:
            return "invalid", _message(ev, spec, validation.error_message, validation.message_node)
    return ("unknown" if unsure else "valid"), None


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


__all__ = ["convert", "judge", "scan_terraform", "verdict"]
