"""Calling a verb as an MCP tool: the engine's keywords from the tool's arguments,
the run (one provider or every one), and the error results for arguments that do
not say what to act on, that the input schema refuses, or a tool that does not exist."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from dreamlake.engine.contract.result import ProviderLifecycleResult

from .next_action import wire_with_calls
from .schemas import arguments
from .tools import TOOLS, Argument, VerbTool


def _engine_fn(tool: VerbTool) -> Callable[..., ProviderLifecycleResult]:
    module, _, attr = tool.engine.partition(":")
    fn: Callable[..., ProviderLifecycleResult] = getattr(importlib.import_module(module), attr)
    return fn


def engine_kwargs(
    tool: VerbTool, given: Mapping[str, Any], default_dream_dir: str | None
) -> dict[str, Any]:
    """The engine's keywords for a call: the given arguments by parameter name, the
    server's --dream-dir where none was given, and ``yes`` only ever as given."""
    kwargs: dict[str, Any] = {}
    for a in arguments(tool):
        if a.key == tool.many_flag:
            continue  # chooses the engine function (see wants_many), is not its keyword
        if a.key in given:
            value = given[a.key]
        elif a.key == "dream_dir":
            value = default_dream_dir
        elif a.key == "yes":
            value = False
        else:
            continue
        if a.key == "yes":
            value = value is True  # never anything but an explicit true
        kwargs[tool.rename.get(a.param, a.param)] = value
    return kwargs


def wants_many(tool: VerbTool, given: Mapping[str, Any]) -> bool:
    """Whether this call answers with one result per provider."""
    return tool.many or (tool.many_flag is not None and given.get(tool.many_flag) is True)


def target_problem(tool: VerbTool, given: Mapping[str, Any]) -> str | None:
    """A tool that acts on one provider or on every one needs exactly one of the two."""
    if tool.many_flag is None:
        return None
    if wants_many(tool, given) == bool(given.get("name")):
        return f"give either name or {tool.many_flag}: true"
    return None


def run_many(
    tool: VerbTool, given: Mapping[str, Any], *, default_dream_dir: str | None = None
) -> list[ProviderLifecycleResult] | ProviderLifecycleResult:
    """A verb with one result per provider (``list``, ``reconcile --all``): what its
    ``--json`` prints, the array, or the one failure document when it could not look
    (a broken .dreamrc)."""
    from dreamlake.engine.contract.errors import DreamlakeError
    from dreamlake.engine.verbs.listing import list_failure

    fn: Callable[..., list[ProviderLifecycleResult]]
    if tool.many_engine is not None:
        module, _, attr = tool.many_engine.partition(":")
        fn = getattr(importlib.import_module(module), attr)
    else:
        fn = _engine_fn(tool)  # type: ignore[assignment]
    kwargs = engine_kwargs(tool, given, default_dream_dir)
    kwargs.pop("name", None)
    try:
        return fn(**kwargs)
    except DreamlakeError as exc:
        return list_failure(exc, kwargs.get("dream_dir"))


def run_tool(
    tool: VerbTool,
    given: Mapping[str, Any],
    *,
    default_dream_dir: str | None = None,
    sink: Callable[[Any], None] | None = None,
) -> ProviderLifecycleResult:
    """Run one verb in this thread, its progress events to ``sink``; the result is
    the one ``--json`` prints (an unexpected failure included)."""
    from dreamlake.engine.contract import events

    from ..invoke import run_verb

    kwargs = engine_kwargs(tool, given, default_dream_dir)
    name = str(kwargs.get("name") or "")
    verb = tool.command[-1]
    fn = _engine_fn(tool)
    dream_dir = kwargs.get("dream_dir")

    def call() -> ProviderLifecycleResult:
        return run_verb(verb, name, dream_dir, lambda: fn(**kwargs))

    if sink is None:
        return call()
    with events.recording(sink, verb=verb, provider=name) as rec:
        result = call()
        rec.emit("end", status=result.status, message=result.status)
    return result


def call_table() -> list[tuple[str, tuple[str, ...], list[Argument]]]:
    """Every tool with its command and arguments, to turn a next action into a call."""
    return [(t.name, t.command, arguments(t)) for t in TOOLS]


def wire(result: ProviderLifecycleResult) -> dict[str, Any]:
    """The document a tool returns for ``result``: ``--json``'s, its next action
    with the tool and arguments that run it (see ``cli/mcp/next_action.py``)."""
    return wire_with_calls(result, call_table())


def usage_result(
    tool: VerbTool, problem: str, given: Mapping[str, Any], default_dream_dir: str | None
) -> ProviderLifecycleResult:
    """Arguments that do not say what to act on: an error result, as the CLI's."""
    from dreamlake.engine.contract import commands
    from dreamlake.engine.contract.errors import UsageError
    from dreamlake.engine.verbs._common import error_result
    from dreamlake.engine.world.paths import NAME_RE, find_root

    dream_dir = given.get("dream_dir", default_dream_dir)
    name = str(given.get("name") or "")
    command = (
        commands.reconcile(name, dream_dir)
        if NAME_RE.fullmatch(name)
        else f"dreamlake {' '.join(tool.command)} --help"
    )
    from dreamlake.engine.contract.result import Run

    exc = UsageError(problem, next_action=Run(command=command))
    return error_result(exc, name, root=find_root(dream_dir), dream_dir=dream_dir)


def schema_result(
    tool: VerbTool, message: str, given: Mapping[str, Any], default_dream_dir: str | None
) -> ProviderLifecycleResult:
    """Arguments the tool's input schema refuses: a usage error result, its next
    action the command's help (the arguments' own values are not trusted here)."""
    from dreamlake.engine.contract.errors import UsageError
    from dreamlake.engine.contract.result import Run
    from dreamlake.engine.verbs._common import error_result
    from dreamlake.engine.world.paths import NAME_RE, find_root

    dream_dir = given.get("dream_dir", default_dream_dir)
    dream_dir = dream_dir if isinstance(dream_dir, str) else default_dream_dir
    name = given.get("name")
    name = name if isinstance(name, str) and NAME_RE.fullmatch(name) else ""
    exc = UsageError(message, next_action=Run(command=f"dreamlake {' '.join(tool.command)} --help"))
    return error_result(exc, name, root=find_root(dream_dir), dream_dir=dream_dir)


def unknown_tool_result(
    name: str, known: list[str], default_dream_dir: str | None
) -> ProviderLifecycleResult:
    """A tool this server does not have: a usage error result naming the tools (the
    closest first), its next action listing the providers."""
    import difflib

    from dreamlake.engine.contract.errors import UsageError
    from dreamlake.engine.contract.result import Run
    from dreamlake.engine.verbs._common import error_result
    from dreamlake.engine.world.paths import find_root

    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    exc = UsageError(
        f"no tool {name!r}{hint}; tools: {', '.join(known)}",
        next_action=Run(command="dreamlake provider list"),
    )
    return error_result(exc, "", root=find_root(default_dream_dir), dream_dir=default_dream_dir)


EVENT_META = "dreamlake/event"  # the progress event, as --events writes it, in _meta


def event_sentence(event: Any) -> str:
    """One line for a person about a progress event (the event itself rides in _meta)."""
    what = f"{event.verb} {event.provider}"
    if event.type == "end":
        return f"{what}: done, {event.status or event.message}"
    if event.message:
        return f"{what}: {event.message}"
    addr = event.address
    if addr and event.type in ("resource_start", "resource_progress"):
        return f"{what}: {event.action or 'working on'} {addr}"
    if addr and event.type == "resource_done":
        return f"{what}: {addr} {event.action or 'done'} done"
    if addr and event.type == "resource_failed":
        return f"{what}: {addr} failed"
    if event.step:
        return f"{what}: {event.step}"
    return f"{what}: {event.type.replace('_', ' ')}"


__all__ = [
    "EVENT_META",
    "call_table",
    "engine_kwargs",
    "event_sentence",
    "run_many",
    "run_tool",
    "schema_result",
    "target_problem",
    "unknown_tool_result",
    "usage_result",
    "wants_many",
    "wire",
]
