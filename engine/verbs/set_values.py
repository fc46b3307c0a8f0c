"""``dreamlake provider set -n NAME KEY=VALUE ...``: settle decisions without an editor.

Each ``KEY`` is a decision of the provider's template (its ``key``, or the variable
it names) or, on terraform, any variable the provider's own configuration declares
(one a user added: plan asks for it by that name). The value is read as the variable's declared type and written into the
provider's own file — ``terraform.tfvars``, ``Pulumi.<stack>.yaml`` or
``adopt.json`` — atomically, the rest of the file kept (``engine/scan/write.py``).
Then the same decision scan as ``create --continue`` judges the file: a value it
refuses puts every file back as it was and comes back as an ``error`` saying why;
otherwise the result is the one ``create --continue`` returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..contract import commands
from ..contract.errors import DreamlakeError
from ..contract.result import EditThenContinue, ProviderLifecycleResult, Run
from ..world.paths import ProviderPaths, check_name
from ..world.vendors import Decision, Template
from ._common import error_result, root_for


def _decision(template: Template, key: str) -> Decision | None:
    return template.decision(key) or next((d for d in template.decisions if d.var == key), None)


TFVARS = "terraform/terraform.tfvars"


def _settable(paths: ProviderPaths, template: Template, backend: str, key: str) -> Decision | None:
    """The template's decision ``key`` names, else — on terraform — a variable the
    provider's own configuration declares (a ``variable`` block in its ``*.tf``,
    one a user added): it is set in terraform.tfvars, typed by its declaration, as
    plan asks for it when it has no value. None: neither."""
    d = _decision(template, key)
    if d is not None or backend != "terraform":
        return d
    from ..scan.tfvars import read_variables

    file = next((x.file for x in template.decisions if x.file.endswith(".tfvars")), TFVARS)
    if key not in read_variables((paths.dir / file).absolute().parent):
        return None
    return Decision(key=key, var=key, file=file)


def _listed(template: Template) -> str:
    """The decisions' keys, each with the variable it is written as when that differs
    (``node_type (gpu_instance_types)``): either name is accepted."""
    return ", ".join(d.key if d.var == d.key else f"{d.key} ({d.var})" for d in template.decisions)


def _target(paths: ProviderPaths, backend: str, d: Decision) -> Path:
    if backend == "pulumi":
        from ..backends.pulumi.project import PulumiProject

        return PulumiProject.of(paths.dir).stack_file.absolute()
    return (paths.dir / d.file).absolute()


def _kind(paths: ProviderPaths, template: Template, backend: str, d: Decision, text: str) -> Any:
    from ..scan import write as dw

    if backend == "pulumi":
        from ..backends.pulumi.project import config_model

        model = config_model(template.vendor)
        field = getattr(model, "model_fields", {}).get(d.key) if model is not None else None
        return dw.model_kind(field.annotation) if field is not None else "any"
    if backend == "none":
        import json

        try:
            current = json.loads(text).get(d.var) if text.strip() else None
        except (ValueError, AttributeError):
            current = None
        for sample in (current, d.placeholder):
            if sample is not None:
                return dw.value_kind(sample)
        return {"port": "number", "queues": "list"}.get(d.var, "string")
    from ..scan.tfvars import read_variables

    spec = read_variables((paths.dir / d.file).absolute().parent).get(d.var)
    return dw.tf_kind(spec.type if spec is not None else None)


def _edit(paths: ProviderPaths, backend: str, d: Decision, text: str, value: Any) -> str:
    from ..scan import write as dw

    if backend == "pulumi":
        from ..backends.pulumi.project import PulumiProject

        return dw.set_stack_yaml(text, PulumiProject.of(paths.dir).name, d.key, value)
    if backend == "none" or str(d.file).endswith(".json"):
        return dw.set_adopt(text, d.var, value)
    return dw.set_tfvars(text, d.var, value)


def parse_assignments(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` words as a mapping (the value may hold ``=``; later wins)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise DreamlakeError(
                f"{pair!r} is not KEY=VALUE (e.g. region=us-east-1, queues=default,gpu)",
                kind="usage",
            )
        out[key.strip()] = value
    return out


def set_values(
    name: str,
    values: Mapping[str, Any],
    *,
    dream_dir: str | None = None,
    cwd: Path | None = None,
) -> ProviderLifecycleResult:
    """Write ``values`` (decision key → value) into the provider's own files."""
    from ..settings.fsutil import atomic_write
    from ..settings.readers import FileProblem, read_text
    from ..world.observe import observe

    root = root_for(dream_dir, cwd)
    try:
        check_name(name)
        obs = observe(name, root, dream_dir, probe=False, infra=False, claims=False)
    except DreamlakeError as exc:
        return error_result(exc, name, root=root, dream_dir=dream_dir)
    again = commands.create_continue(name, dream_dir)
    record, template = obs.record, obs.template
    assert record is not None  # observe(require=True) raised otherwise
    if template is None:
        err = DreamlakeError(
            f"'{name}' has no template with decisions to set ({record.vendor}).",
            kind="unknown_vendor",
        )
        return error_result(err, name, root=root, dream_dir=dream_dir)
    if not values:
        err = DreamlakeError(
            f"nothing to set: give KEY=VALUE for a decision ({_listed(template)})",
            kind="usage",
            next_action=Run(command=again),
        )
        return error_result(err, name, root=root, dream_dir=dream_dir)
    paths = ProviderPaths(obs.dir)
    backend = record.backend
    if backend == "pulumi":
        from ..backends.pulumi.project import PulumiProject

        if PulumiProject.of(paths.dir).adopted:
            err = DreamlakeError(
                f"'{name}' adopts an existing Pulumi stack: its config is the team's, set "
                "where its program lives. Nothing was written.",
                kind="adopted_stack",
                next_action=Run(command=commands.status(name, dream_dir)),
            )
            return error_result(err, name, root=root, dream_dir=dream_dir)
    unknown = [k for k in values if _settable(paths, template, backend, k) is None]
    if unknown:
        own = " or a variable its terraform declares" if backend == "terraform" else ""
        err = DreamlakeError(
            f"{', '.join(repr(k) for k in unknown)} is not a decision of '{name}'{own}; its "
            f"decisions: {_listed(template)}. Nothing was written.",
            kind="unknown_decision",
            next_action=Run(command=again),
        )
        return error_result(err, name, root=root, dream_dir=dream_dir)

    originals: dict[Path, str | None] = {}
    texts: dict[Path, str] = {}
    set_keys: list[str] = []
    try:
        for key, raw in values.items():
            d = _settable(paths, template, backend, key)
            assert d is not None
            path = _target(paths, backend, d)
            if path not in texts:
                try:
                    originals[path] = read_text(path)
                except FileNotFoundError:
                    originals[path] = None
                texts[path] = originals[path] or ""
            kind = _kind(paths, template, backend, d, texts[path])
            value = _typed(raw, kind)
            if _decision(template, key) is None and not _fits(value, kind):
                # The scan judges the template's decisions only: a variable of the
                # user's own is held to its declared type here.
                raise ValueError(f"{key} is declared {kind}: {raw!r} is not one")
            texts[path] = _edit(paths, backend, d, texts[path], value)
            set_keys.append(d.key)
    except (OSError, FileProblem, ValueError, TypeError) as exc:
        problem = DreamlakeError(
            f"could not set {', '.join(values)}: {exc}. Nothing was written.",
            kind="bad_value",
            next_action=Run(command=again),
        )
        return error_result(problem, name, root=root, dream_dir=dream_dir)

    for path, text in texts.items():
        atomic_write(path, text)
    refused = _refused(paths, template, backend, set_keys)
    if refused is not None:
        for path, before in originals.items():  # put the user's files back as they were
            if before is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write(path, before)
        file = refused[1] or str(next(iter(texts)))
        err = DreamlakeError(
            f"{refused[0]} Nothing was written.",
            kind="invalid_value",
            next_action=EditThenContinue(file=file, command=again),
        )
        return error_result(err, name, root=root, dream_dir=dream_dir)

    from .create import create

    result = create(name, continue_=True, dream_dir=dream_dir, cwd=cwd)
    files = ", ".join(sorted({str(p) for p in texts}))
    return result.with_notes(f"set {', '.join(set_keys)} in {files}")


def _fits(value: Any, kind: Any) -> bool:
    """Whether ``value`` is of the declared ``kind`` (``any``/``string``: anything)."""
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list)
    if kind == "json":
        return isinstance(value, dict | list)
    return True


def _typed(raw: Any, kind: Any) -> Any:
    from ..scan.write import coerce

    return coerce(raw, kind)


def _refused(
    paths: ProviderPaths, template: Template, backend: str, keys: list[str]
) -> tuple[str, str | None] | None:
    """Why the scan refuses one of ``keys`` as now written, and in which file."""
    from ..scan import scan

    try:
        blocking = scan(paths, template, backend, probe=False).blocking
    except DreamlakeError as exc:
        return exc.message, str(getattr(exc, "path", "") or "") or None
    for b in blocking:
        if b.key in keys:
            reason = b.message or {"unset": "is not set", "placeholder": "is a placeholder"}.get(
                b.reason, b.reason
            )
            return f"{b.key}: {reason}", b.file
    return None


__all__ = ["parse_assignments", "set_values"]
