"""A next action as an MCP client calls it: the tool and its arguments beside the
command, so an agent never parses flags.

Over MCP a ``run`` or ``edit_then_continue`` next action whose command is one of the
tools also carries ``"tool"`` and ``"arguments"`` (``dreamlake provider plan -n lab``
→ ``{"tool": "provider_plan", "arguments": {"name": "lab"}}``); an
``edit_then_continue`` with decisions to settle also carries ``"edit"``, the
``provider_set`` call that settles them without a file editor (add ``values``). A
``shell`` action is not a tool and stays as it is. Everything else in the document is
exactly what ``--json`` prints.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dreamlake.engine.contract.result import ProviderLifecycleResult

SET_TOOL = "provider_set"

_CALL_PROPS: dict[str, Any] = {
    "tool": {
        "type": "string",
        "description": "Over MCP: the tool that runs `command` (the same step).",
    },
    "arguments": {
        "type": "object",
        "description": "Over MCP: the arguments of `tool`, `command`'s flags as a tool takes them.",
    },
}
_EDIT_PROP: dict[str, Any] = {
    "type": "object",
    "description": "Over MCP: the provider_set call that edits `file` for you; add `values` "
    "({key: value} for every .blocking[].key), then call `tool` with `arguments`.",
    "properties": {"tool": {"const": SET_TOOL}, "arguments": {"type": "object"}},
    "required": ["tool", "arguments"],
}


def with_calls_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The contract's schema with the MCP-only fields of a next action declared."""
    out = copy.deepcopy(schema)
    defs = out.get("$defs", {})
    for name in ("Run", "EditThenContinue"):
        if name in defs:
            defs[name].setdefault("properties", {}).update(copy.deepcopy(_CALL_PROPS))
    if "EditThenContinue" in defs:
        defs["EditThenContinue"]["properties"]["edit"] = copy.deepcopy(_EDIT_PROP)
    return out


# (tool name, its command path, its arguments: each with .key, .flags, .schema)
CallTable = Sequence[tuple[str, tuple[str, ...], Sequence[Any]]]


def call_for(command: str, table: CallTable) -> dict[str, Any] | None:
    """``{"tool", "arguments"}`` for a ``dreamlake ...`` command a tool runs, else None."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    if not words or words[0] != "dreamlake":
        return None
    words = words[1:]
    row = next((r for r in table if tuple(words[: len(r[1])]) == r[1]), None)
    if row is None:
        return None
    tool_name, path, args = row
    by_flag = {flag: a for a in args for flag in a.flags}
    out: dict[str, Any] = {}
    rest = words[len(path) :]
    i = 0
    while i < len(rest):
        word = rest[i]
        flag, eq, inline = word.partition("=")
        a = by_flag.get(flag if word.startswith("--") else word)
        if a is None:
            if word.startswith("-") or "name" in out or not any(x.key == "name" for x in args):
                return None  # a flag the tool has not: no call, the command stays
            out["name"] = word
        elif a.schema.get("type") == "boolean":
            out[a.key] = True
        else:
            if eq:
                value = inline
            elif i + 1 < len(rest):
                i += 1
                value = rest[i]
            else:
                return None
            out[a.key] = _typed(value, a.schema.get("type"))
        i += 1
    return {"tool": tool_name, "arguments": out}


def _typed(value: str, kind: Any) -> Any:
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        pass
    return value


def wire_with_calls(result: ProviderLifecycleResult, table: CallTable) -> dict[str, Any]:
    """The ``--json`` document of ``result``, its next action with the MCP call."""
    doc = result.to_wire()
    nxt = doc.get("nextAction")
    if not isinstance(nxt, dict) or nxt.get("kind") not in ("run", "edit_then_continue"):
        return doc
    call = call_for(str(nxt.get("command", "")), table)
    if call is not None:
        nxt.update(call)
    if nxt["kind"] == "edit_then_continue" and doc.get("blocking") and result.provider:
        nxt["edit"] = {"tool": SET_TOOL, "arguments": {"name": result.provider}}
        dream_dir = (call or {}).get("arguments", {}).get("dream_dir")
        if dream_dir:
            nxt["edit"]["arguments"]["dream_dir"] = dream_dir
    return doc


__all__ = ["SET_TOOL", "call_for", "wire_with_calls", "with_calls_schema"]
