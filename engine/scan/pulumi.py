"""The decision scan for the Pulumi backend: ``Pulumi.<name>.yaml`` against the
vendor's config model (``dreamlake.stacks.<vendor>.Config``).

For each decision of ``TEMPLATE.json``: the key ``<project>:<key>`` (a bare
``<key>`` is not read: Pulumi ignores it, so it is reported) unset, still the template's placeholder, or failing the
config model's validators (which mirror the terraform ``validation`` blocks) →
a ``Blocking`` with the absolute stack file and the 1-based line of the key, or
of its commented-out line when it is unset. A cross-field validator reports
``conflict`` on every key it names. Settings that are not decisions block only
when they are set to an invalid value. Secret values (``secure:``) cannot be read
offline and count as set. Offline: no ``pulumi`` import, no CLI.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..backends.pulumi.project import PulumiProject, config_model
from ..contract.result import Blocking
from ..settings.readers import FileProblem, as_error, read_text
from ..settings.yamlload import bounded, compose
from ..world.paths import ProviderPaths
from ..world.vendors import Template
from .placeholder import is_placeholder


def scan_pulumi(paths: ProviderPaths, template: Template) -> list[Blocking]:
    project = PulumiProject.of(paths.dir)
    stack_file = project.stack_file.absolute()
    file = str(stack_file)
    namespace = project.name
    try:
        text = read_text(stack_file)
    except FileNotFoundError:
        text = None
    except (OSError, FileProblem) as exc:
        raise as_error(exc, "", path=stack_file, kind="bad_stack_file") from None
    if text is None:
        return [
            Blocking(
                key=d.key,
                reason="unset",
                file=file,
                why=d.why or None,
                message=f"{stack_file.name} does not exist; create it with a "
                f"'{namespace}:{d.key}' key under 'config:'.",
            )
            for d in template.decisions
        ]
    try:
        config, lines, issues = read_stack_config(text, namespace)
    except ValueError as exc:
        line = getattr(exc, "line", None)
        return [
            Blocking(
                key=d.key,
                reason="invalid",
                file=file,
                line=line,
                why=d.why or None,
                message=str(exc),
            )
            for d in template.decisions
        ]
    commented = commented_lines(text, namespace)
    out: dict[str, Blocking] = {}

    def add(key: str, reason: str, message: str | None, at: int | None = None) -> None:
        d = template.decision(key)
        prev = out.get(key)
        if prev is not None:
            if message and prev.message and message not in prev.message:
                out[key] = prev.model_copy(update={"message": f"{prev.message} {message}"})
            return
        line = at or lines.get(key) or (commented.get(key) if reason == "unset" else None)
        out[key] = Blocking(
            key=key,
            reason=reason,  # type: ignore[arg-type]
            file=file,
            line=line,
            why=(d.why or None) if d else None,
            message=message,
        )

    for key, (reason, at, message) in issues.items():
        add(key, reason, message, at)
    values: dict[str, Any] = {}
    secure: set[str] = set()
    for key, value in config.items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            secure.add(key)
            continue
        values[key] = value
    for d in template.decisions:
        if d.key in secure or d.key in out:
            values.pop(d.key, None)
            continue
        if d.key not in values or values[d.key] is None or values[d.key] == "":
            values.pop(d.key, None)
            add(d.key, "unset", None)
        elif is_placeholder(values[d.key], d.placeholder):
            value = values.pop(d.key)
            add(d.key, "placeholder", f"{d.key} is still the template's placeholder {value!r}.")

    model = config_model(template.vendor)
    if model is not None:
        try:
            model.model_validate(values)
        except ValidationError as exc:
            for err in exc.errors():
                loc = err.get("loc") or ()
                key = str(loc[0]) if loc else ""
                msg = str(err.get("msg", "")).removeprefix("Value error, ")
                if err.get("type") == "conflict":
                    for k in (err.get("ctx") or {}).get("keys") or [key]:
                        add(str(k), "conflict", msg)
                    continue
                if not key or key in secure or key in out:
                    continue
                if err.get("type") == "missing":
                    if template.decision(key) is not None:
                        add(key, "unset", None)
                    else:  # a required setting without a default, outside the decisions
                        add(key, "unset", f"{key} has no default; set it.")
                    continue
                add(key, "invalid", msg)
    order = {d.key: i for i, d in enumerate(template.decisions)}
    return sorted(out.values(), key=lambda b: (order.get(b.key, len(order)), b.key))


class StackFileError(ValueError):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


Issue = tuple[str, int | None, str]
"""(reason, line, message) for a key written the wrong way."""


def read_stack_config(
    text: str, namespace: str
) -> tuple[dict[str, Any], dict[str, int], dict[str, Issue]]:
    """The project's config values from a stack file, the 1-based line of each key,
    and the keys written in a way Pulumi refuses.

    Values come from ``<namespace>:<key>``; other namespaces are skipped. A bare
    ``<key>`` is not read as config by Pulumi: it is reported (``invalid``, or
    ``conflict`` beside the namespaced key), as is a key given twice (``conflict``).
    """
    try:
        node = compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise StackFileError(f"the stack file is not valid YAML: {exc}", line) from None
    if node is None:
        return {}, {}, {}
    if not isinstance(node, yaml.MappingNode):
        raise StackFileError("the stack file must be a YAML mapping with a 'config:' key", 1)
    config = next(
        (v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == "config"),
        None,
    )
    if config is None or (
        isinstance(config, yaml.ScalarNode) and config.value in ("", "~", "null")
    ):
        return {}, {}, {}
    if not isinstance(config, yaml.MappingNode):
        line = config.start_mark.line + 1
        raise StackFileError("'config:' must be a mapping of '<project>:<key>: value'", line)
    build = bounded(yaml.SafeLoader)("")
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    bare: dict[str, int] = {}
    issues: dict[str, Issue] = {}
    for k, v in config.value:
        name = str(k.value)
        line = k.start_mark.line + 1
        if ":" not in name:
            bare.setdefault(name, line)
            continue
        ns, _, key = name.partition(":")
        if ns != namespace:
            continue
        value = build.construct_object(v, deep=True)
        if key in values:
            if value != values[key]:
                issues[key] = (
                    "conflict",
                    line,
                    f"{name} is set twice (lines {lines[key]} and {line}) with different "
                    "values; keep one.",
                )
            continue
        values[key] = value
        lines[key] = line
    for key, line in bare.items():
        if key in values:
            issues.setdefault(
                key,
                (
                    "conflict",
                    line,
                    f"{key} (line {line}) and {namespace}:{key} (line "
                    f"{lines[key]}) both name this setting; delete the bare {key}.",
                ),
            )
        else:
            lines[key] = line
            issues[key] = (
                "invalid",
                line,
                f"Pulumi reads stack config keys as <project>:<key>; rename {key} to "
                f"{namespace}:{key}.",
            )
    return values, lines, issues


def commented_lines(text: str, namespace: str) -> dict[str, int]:
    """1-based lines of commented-out keys: ``# <namespace>:<key>: ...`` (a bare
    ``# <key>: ...`` only when no namespaced line names the key)."""
    full = re.compile(rf"^\s*#\s*{re.escape(namespace)}:([A-Za-z_][\w-]*)\s*:(?:\s|$)")
    bare = re.compile(r"^\s*#\s*([A-Za-z_][\w-]*)\s*:(?:\s|$)")
    out: dict[str, int] = {}
    loose: dict[str, int] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        m = full.match(line)
        if m:
            out.setdefault(m.group(1), i)
            continue
        m = bare.match(line)
        if m:
            loose.setdefault(m.group(1), i)
    return {**loose, **out}


def stack_file_for(paths: ProviderPaths) -> Path:
    return PulumiProject.of(paths.dir).stack_file.absolute()
