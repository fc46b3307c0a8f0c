"""An MCP tool's schemas and description, derived from its CLI command's own flags
(so a flag added to the CLI is an argument here too) and the contract's JSON Schema."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

from .next_action import with_calls_schema
from .tools import AGENT_LOOP_URI, DESTRUCTIVE_NOTE, Argument, VerbTool

_FLAG_RE = re.compile(r"(?<![\w`-])--([a-z][a-z-]*)")  # a CLI flag named in prose
SKIPPED_FLAGS = frozenset({"as_json", "events"})  # implied (--json) or carried by MCP itself


def _callback(path: tuple[str, ...]) -> Callable[..., Any]:
    """The typer callback behind ``dreamlake <path>``."""
    from ..commands import app

    group: Any = app
    for part in path[:-1]:
        group = next(g.typer_instance for g in group.registered_groups if g.name == part)
    for c in group.registered_commands:
        if (c.name or c.callback.__name__) == path[-1]:
            return c.callback  # type: ignore[no-any-return]
    raise KeyError(f"no command dreamlake {' '.join(path)}")


def _vendors() -> list[str]:
    from dreamlake.engine.world.vendors import known_vendors

    try:
        return sorted(known_vendors())
    except Exception:  # a broken user template: the shipped ones, and create says why
        return ["ec2", "gce", "kube", "local", "ssh"]


def _backends() -> list[str]:
    return ["terraform", "pulumi"]


# Arguments whose values are a closed set: an enum in the input schema.
ENUMS: dict[str, Callable[[], list[str]]] = {"provider": _vendors, "backend": _backends}


def _type_schema(annotation: Any) -> dict[str, Any]:
    args = [a for a in get_args(annotation) if a is not type(None)] or [annotation]
    base = args[0]
    if base is bool:
        return {"type": "boolean"}
    if base is int:
        return {"type": "integer"}
    if base is float:
        return {"type": "number"}
    if get_origin(base) is Literal:
        return {"type": "string", "enum": list(get_args(base))}
    return {"type": "string"}


def arguments(tool: VerbTool) -> list[Argument]:
    """The tool's arguments: one per flag of its CLI command (minus --json/--events)."""
    import inspect

    from typer.models import OptionInfo

    fn = _callback(tool.command)
    hints = get_type_hints(fn, include_extras=True)
    out = []
    for pname, param in inspect.signature(fn).parameters.items():
        hint = hints.get(pname)
        if pname in SKIPPED_FLAGS or pname in tool.skip or get_origin(hint) is not Annotated:
            continue
        base, *meta = get_args(hint)
        info = next((m for m in meta if isinstance(m, OptionInfo)), None)
        if info is None or getattr(info, "hidden", False):
            continue
        # Inside Annotated, typer reads Option's first positional as a flag name too.
        first = [info.default] if isinstance(info.default, str) else []
        decls = [d for d in (*first, *(info.param_decls or ())) if isinstance(d, str)]
        longs = [d for d in decls if d.startswith("--")]
        key = (longs[0][2:] if longs else pname).replace("-", "_")
        schema = _type_schema(base)
        if info.help:
            schema["description"] = info.help
        choices = ENUMS.get(key)
        if choices is not None:
            schema["enum"] = choices()
        required = param.default is inspect.Parameter.empty or pname in tool.require
        if not required and param.default is not None:
            schema["default"] = param.default
        if key == "yes" and tool.destructive:
            schema["default"] = False
            schema["description"] = f"{info.help or ''} {DESTRUCTIVE_NOTE}".strip()
        out.append(Argument(key, pname, schema, required, tuple(decls)))
    out.extend(tool.extra)
    if tool.destructive and not any(a.key == "yes" for a in out):
        raise ValueError(f"{tool.name} is destructive but its command has no --yes flag")
    return out


def input_schema(tool: VerbTool) -> dict[str, Any]:
    """The tool's flags as a JSON Schema: a provider's ``name`` carries its pattern;
    a tool over one provider or every one (``provider_reconcile``) takes exactly one
    of ``name`` and its ``all: true`` (``oneOf``)."""
    from dreamlake.engine.world.paths import NAME_RE

    args = arguments(tool)
    props = {a.key: a.schema for a in args}
    if "name" in props and props["name"].get("type") == "string":
        props["name"] = {**props["name"], "pattern": NAME_RE.pattern}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": [a.key for a in args if a.required],
        "additionalProperties": False,
    }
    if tool.many_flag is not None and "name" in props:
        flag = tool.many_flag
        schema["oneOf"] = [
            {"required": ["name"]},
            {"required": [flag], "properties": {flag: {"const": True}}},
        ]
    return schema


RESULT_SCHEMA_URI = "dreamlake://schema/result"
"""The resource holding the result's full JSON Schema (``result_schema``)."""


def result_schema() -> dict[str, Any]:
    """The contract's JSON Schema with the next action's MCP members declared: the
    full schema of one result, served once as the resource ``RESULT_SCHEMA_URI``."""
    from dreamlake.engine.contract.result import json_schema

    return with_calls_schema(json_schema())


def _result_outline(full: dict[str, Any]) -> dict[str, Any]:
    """One result, compactly: the contract's required members (and ``kind`` and
    ``error``) as the contract types them, its next action by the members an agent
    acts on. Every result the full schema admits passes it; it refers to nothing
    outside itself, so a client validates against it as it is."""
    props = full["properties"]
    members: dict[str, Any] = {}
    for key in (*full["required"], "kind", "error"):
        members[key] = {k: v for k, v in props[key].items() if k not in ("title", "default")}
    nxt = props["nextAction"]
    kinds = sorted(
        next(a for a in nxt["anyOf"] if "discriminator" in a)["discriminator"]["mapping"]
    )
    calls = full["$defs"]["Run"]["properties"]
    members["nextAction"] = {
        "type": ["object", "null"],
        "description": f"{nxt.get('description', '')} Its members: {RESULT_SCHEMA_URI}.".strip(),
        "properties": {
            "kind": {"enum": kinds},
            "command": {"type": "string"},
            "tool": calls["tool"],
            "arguments": calls["arguments"],
        },
        "required": ["command"],
    }
    return {
        "type": "object",
        "description": "The document `--json` prints. Branch on status and nextAction; "
        f"every member is in the resource {RESULT_SCHEMA_URI}.",
        "properties": members,
        "required": list(full["required"]),
    }


def output_schema(tool: VerbTool | None = None) -> dict[str, Any]:
    """A tool's output schema: one result in outline (the full schema is the resource
    ``RESULT_SCHEMA_URI``, read once, not repeated in every tool); for a tool with one
    result per provider, an object holding their array."""
    one = _result_outline(result_schema())
    if tool is None or not (tool.many or tool.many_flag):
        return one
    if tool.many:
        return _many(one)
    # one result or every provider's: the outline once, referred to within the schema
    ref = {"$ref": "#/$defs/result"}
    return {"type": "object", "$defs": {"result": one}, "anyOf": [ref, _many(ref)]}


def _many(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"providers": {"type": "array", "items": item}},
        "required": ["providers"],
    }


def description(tool: VerbTool) -> str:
    text = tool.doc or " ".join((_callback(tool.command).__doc__ or tool.name).split())
    text = _FLAG_RE.sub(lambda m: f"{m.group(1).replace('-', '_')}: true", text)
    if tool.many:
        text += (
            f"\n\nSame as `dreamlake {' '.join(tool.command)} --json`: returns that array, "
            "as {providers: [...]}, one result per provider (each branches on .status and "
            ".nextAction like the other tools)."
        )
    else:
        text += (
            f"\n\nSame as `dreamlake {' '.join(tool.command)} --json`: returns that document. "
            "Branch on .status and .nextAction (read the resource " + AGENT_LOOP_URI + ")."
        )
    if tool.destructive:
        text += "\n\n" + DESTRUCTIVE_NOTE
    return text


# ---------------------------------------------------------------------------


__all__ = [
    "ENUMS",
    "RESULT_SCHEMA_URI",
    "SKIPPED_FLAGS",
    "arguments",
    "description",
    "input_schema",
    "output_schema",
    "result_schema",
]
