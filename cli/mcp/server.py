"""``dreamlake mcp``: the lifecycle verbs as Model Context Protocol tools (stdio).

One row of :data:`TOOLS` per verb — the tool's name, the CLI command whose flags
are its inputs, the engine function it calls, and whether it spends or destroys
money. Everything else is derived: a tool's input schema from its command's flags
(so a flag added to the CLI is an argument here too), its output schema the
contract's JSON Schema, its result exactly the document ``--json`` prints.

Destructive tools carry ``destructiveHint`` and act only on an explicit
``yes: true``; the server never supplies it. The server never prompts: the verbs
never do, stdin is the protocol, and whatever the verbs run gets /dev/null as its
stdin and stderr as its stdout, so nothing but protocol messages reaches the
client's pipe. Progress events go to the client as progress notifications when
the call carries a progress token.

The ``mcp`` package is imported here only, when the command runs.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

from dreamlake.engine.contract.result import ProviderLifecycleResult

from .next_action import wire_with_calls, with_calls_schema

AGENT_LOOP_URI = "dreamlake://agent-loop"
_FLAG_RE = re.compile(r"(?<![\w`-])--([a-z][a-z-]*)")  # a CLI flag named in prose
SKIPPED_FLAGS = frozenset({"as_json", "events"})  # implied (--json) or carried by MCP itself


_NAMED = frozenset({"name"})


@dataclass(frozen=True)
class Argument:
    key: str  # the tool argument: the long flag without dashes, '-' -> '_'
    param: str  # the CLI parameter's name (the engine keyword unless renamed)
    schema: dict[str, Any]
    required: bool
    flags: tuple[str, ...] = ()  # its spellings on the command line (-n, --name)


SET_VALUES = Argument(
    "values",
    "values",
    {
        "type": "object",
        "description": 'Decision key -> value, e.g. {"region": "us-east-1", "queues": '
        '["default"]}. Keys are the .blocking[].key of the last result; a value is a '
        "string, number, boolean, list or object (text is read as the variable's declared "
        "type).",
        "minProperties": 1,
        "additionalProperties": {
            "type": ["string", "number", "boolean", "array", "object"],
        },
    },
    True,
)


@dataclass(frozen=True)
class VerbTool:
    """One verb as a tool. ``command`` is the CLI path whose flags become the inputs;
    ``engine`` is ``module:function``, called with the flags' parameter names as
    keywords (``rename`` maps a flag's parameter name to the engine's keyword
    where they differ)."""

    name: str
    command: tuple[str, ...]
    engine: str
    destructive: bool = False
    read_only: bool = False
    rename: Mapping[str, str] = field(default_factory=dict)
    # Flags that are not this tool's (another surface of the same command), and flags
    # the CLI leaves optional for such a surface but this tool needs.
    skip: frozenset[str] = frozenset()
    require: frozenset[str] = _NAMED
    # The engine returns one result per provider: the tool returns {"providers": [...]}.
    many: bool = False
    # Arguments that are not flags of the command (its KEY=VALUE words, say).
    extra: tuple[Argument, ...] = ()
    # The description, where the command's own help names flags this tool has not.
    doc: str | None = None
    # An argument that, when true, makes the call one over every provider: the engine
    # function ``many_engine`` answers it, as {"providers": [...]}.
    many_flag: str | None = None
    many_engine: str | None = None


TOOLS: tuple[VerbTool, ...] = (
    VerbTool(
        "provider_create",
        ("provider", "create"),
        "dreamlake.engine.verbs.create:create",
        skip=frozenset({"file"}),  # create -f registers a control-plane row: not a lifecycle step
        require=_NAMED,
        doc="Scaffold a provider once and report every decision it cannot make itself.",
    ),
    VerbTool(
        "provider_status",
        ("provider", "status"),
        "dreamlake.engine.verbs.status:status",
        read_only=True,
    ),
    VerbTool("provider_plan", ("provider", "plan"), "dreamlake.engine.verbs.plan:plan"),
    VerbTool(
        "provider_apply",
        ("provider", "apply"),
        "dreamlake.engine.verbs.apply:apply",
        destructive=True,
    ),
    VerbTool("provider_connect", ("provider", "connect"), "dreamlake.engine.verbs.connect:connect"),
    VerbTool(
        "provider_set",
        ("provider", "set"),
        "dreamlake.engine.verbs.set_values:set_values",
        extra=(SET_VALUES,),
        doc="Set decision values in the provider's own file (terraform.tfvars, "
        "Pulumi.<name>.yaml or adopt.json), the rest of the file kept, so a person still "
        "reviews one file. Each value is read as its variable's declared type and checked by "
        "the same decision scan as provider_create; a value it refuses "
        "is not written and the result is an error saying why. This is how an agent without "
        "a file editor follows a nextAction of kind edit_then_continue.",
    ),
    # Day 2. suspend / resume / reconcile perform only ungated steps unless yes is true
    # (the engine's gating): a gated one comes back with an approval next action.
    VerbTool(
        "provider_suspend",
        ("provider", "suspend"),
        "dreamlake.engine.verbs.suspend:suspend",
        rename={"timeout": "drain_timeout"},
    ),
    VerbTool("provider_resume", ("provider", "resume"), "dreamlake.engine.verbs.resume:resume"),
    VerbTool(
        "provider_reconcile",
        ("provider", "reconcile"),
        "dreamlake.engine.verbs.reconcile:reconcile",
        require=frozenset(),
        doc="Move the provider towards its target_status: one planned step; gated steps only "
        "with yes: true. With all: true (and no name), every provider of the root, one after "
        "the other, as {providers: [...]}.",
        many_flag="all",
        many_engine="dreamlake.engine.verbs.reconcile:reconcile_all",
    ),
    VerbTool(
        "provider_destroy",
        ("provider", "destroy"),
        "dreamlake.engine.verbs.destroy:destroy",
        destructive=True,
        require=_NAMED,
    ),
    VerbTool(
        "provider_delete",
        ("provider", "delete"),
        "dreamlake.engine.verbs.delete:delete",
        destructive=True,
        require=_NAMED,
    ),
    VerbTool(
        "provider_list",
        ("provider", "list"),
        "dreamlake.engine.verbs.listing:list_providers",
        read_only=True,
        many=True,
        require=frozenset(),
    ),
)

TOOLS_BY_NAME = {t.name: t for t in TOOLS}

DESTRUCTIVE_NOTE = (
    "DESTRUCTIVE: this spends or destroys money. Nothing is done unless `yes` is true, and "
    "the server never sets it: pass `yes: true` only when a person asked for this step."
)


# ---------------------------------------------------------------------------
# schemas, from the CLI's own flags


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


def output_schema(tool: VerbTool | None = None) -> dict[str, Any]:
    """The contract's JSON Schema; for a tool with one result per provider, an
    object holding their array."""
    from dreamlake.engine.contract.result import json_schema

    one = with_calls_schema(json_schema())
    if tool is None or not (tool.many or tool.many_flag):
        return one
    defs = one.pop("$defs", {})
    many = {
        "type": "object",
        "properties": {"providers": {"type": "array", "items": one}},
        "required": ["providers"],
    }
    if tool.many:
        return {"$defs": defs, **many}
    return {"type": "object", "$defs": defs, "anyOf": [one, many]}


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
# calling a verb


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


# ---------------------------------------------------------------------------
# the server


def build_server(default_dream_dir: str | None = None) -> Any:
    import anyio
    import anyio.from_thread
    import anyio.to_thread
    import jsonschema
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    import dreamlake

    from .agent_loop import TEXT

    by_name = TOOLS_BY_NAME

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    title=f"dreamlake {' '.join(t.command)}",
                    description=description(t),
                    input_schema=input_schema(t),
                    output_schema=output_schema(t),
                    annotations=types.ToolAnnotations(
                        title=f"dreamlake {' '.join(t.command)}",
                        read_only_hint=t.read_only,
                        destructive_hint=t.destructive,
                        idempotent_hint=t.read_only,
                        open_world_hint=True,
                    ),
                )
                for t in TOOLS
            ]
        )

    async def call_tool(ctx: Any, params: Any) -> Any:
        # A failure of the call itself (an unknown tool, arguments its input schema
        # refuses) is a tool result with isError, its reason as text, not a protocol error.
        # Both carry the structuredContent of a domain error (kind, error, nextAction).
        args: dict[str, Any] = dict(params.arguments or {})
        tool = by_name.get(params.name)
        if tool is None:
            failed = unknown_tool_result(str(params.name), list(by_name), default_dream_dir)
            return _one_result(types, failed, wire_with_calls(failed, call_table()), [])
        if (why := target_problem(tool, args)) is not None:  # what oneOf refuses, said plainly
            failed = usage_result(tool, why, args, default_dream_dir)
            return _one_result(types, failed, wire_with_calls(failed, call_table()), [])
        try:
            jsonschema.validate(instance=args, schema=input_schema(tool))
        except jsonschema.ValidationError as exc:
            where = ".".join(str(p) for p in exc.absolute_path)
            message = f"Input validation error: {where + ': ' if where else ''}{exc.message}"
            failed = schema_result(tool, message, args, default_dream_dir)
            return _one_result(types, failed, wire_with_calls(failed, call_table()), [])
        try:
            return await _call(tool, args, ctx)
        except Exception as exc:
            return _error_text(types, str(exc))

    async def _call(tool: VerbTool, args: dict[str, Any], ctx: Any) -> Any:
        table = call_table()
        problem = target_problem(tool, args)
        if problem is not None:
            failed = usage_result(tool, problem, args, default_dream_dir)
            return _one_result(types, failed, wire_with_calls(failed, table), [])
        if wants_many(tool, args):
            many = await anyio.to_thread.run_sync(
                lambda: run_many(tool, args, default_dream_dir=default_dream_dir)
            )
            if not isinstance(many, list):  # could not look: the failure, with its next action
                return _one_result(types, many, wire_with_calls(many, table), [])
            docs = {"providers": [wire_with_calls(r, table) for r in many]}
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps(docs, indent=2))],
                structured_content=docs,
                is_error=any(r.exit_code != 0 for r in many),
            )
        token = (ctx.meta or {}).get("progress_token")
        sink = None
        if token is not None:
            session, request_id = ctx.session, ctx.request_id

            def sink(event: Any) -> None:
                note = types.ProgressNotification(
                    params=types.ProgressNotificationParams(
                        progress_token=token,
                        progress=float(event.seq),
                        total=None,
                        message=event_sentence(event),
                        _meta={EVENT_META: json.loads(event.to_json())},
                    )
                )
                anyio.from_thread.run(
                    lambda: session.send_notification(note, related_request_id=request_id)
                )

        result: ProviderLifecycleResult = await anyio.to_thread.run_sync(
            lambda: run_tool(tool, args, default_dream_dir=default_dream_dir, sink=sink)
        )
        # First the --json document (its next action with the tool to call); then the
        # prose notes a person would read.
        notes = list(result.notes)
        if tool.destructive and args.get("yes") is not True:
            notes.append(
                f"Nothing was done: {tool.name} acts only with yes: true, which this server never "
                "sets. Ask a person; call it again with yes: true only if they agree."
            )
        return _one_result(types, result, wire_with_calls(result, table), notes)

    async def list_resources(ctx: Any, params: Any) -> Any:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=AGENT_LOOP_URI,
                    name="agent-loop",
                    title="The loop, for an agent",
                    description="How to drive dreamlake: branch on status and nextAction; "
                    "the FUSE rule.",
                    mime_type="text/markdown",
                )
            ]
        )

    async def read_resource(ctx: Any, params: Any) -> Any:
        if str(params.uri) != AGENT_LOOP_URI:
            # code 0, the error the server has always answered an unknown resource with
            raise MCPError(code=0, message=f"no resource {params.uri}; resources: {AGENT_LOOP_URI}")
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=AGENT_LOOP_URI, mime_type="text/markdown", text=TEXT)
            ]
        )

    return Server(
        "dreamlake",
        version=dreamlake.__version__,
        instructions=(
            "Provision and connect compute providers. Every tool returns where the provider "
            "stands and its nextAction; follow nextAction (read "
            f"{AGENT_LOOP_URI} for the rules). Tools marked destructive need yes: true."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def _error_text(types: Any, message: str) -> Any:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def _one_result(
    types: Any, result: ProviderLifecycleResult, doc: dict[str, Any], notes: list[str]
) -> Any:
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=json.dumps(doc, indent=2)),
            *([types.TextContent(type="text", text="\n".join(notes))] if notes else []),
        ],
        structured_content=doc,
        is_error=result.exit_code != 0,
    )


def _protocol_streams() -> tuple[Any, Any]:
    """The client's pipe for the protocol alone: keep private copies of stdin and
    stdout, then point fd 0 at /dev/null and fd 1 at stderr, so neither a verb nor a
    program it runs can read the client's requests or write into its replies."""
    import anyio

    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    stdin = anyio.wrap_file(
        io.TextIOWrapper(os.fdopen(proto_in, "rb"), encoding="utf-8", errors="replace")
    )
    stdout = anyio.wrap_file(
        io.TextIOWrapper(os.fdopen(proto_out, "wb"), encoding="utf-8", errors="replace")
    )
    return stdin, stdout


def serve(dream_dir: str | None = None) -> int:
    """Run the server on stdio until the client closes it."""
    try:
        import anyio
        from mcp.server.stdio import stdio_server
    except ImportError:
        sys.stderr.write(
            "✗ dreamlake mcp needs the MCP SDK, an optional extra\n"
            "next: pip install 'dreamlake[mcp]'\n"
        )
        return 1
    server = build_server(dream_dir)
    stdin, stdout = _protocol_streams()

    async def main() -> None:
        async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        return 130
    return 0


__all__ = [
    "AGENT_LOOP_URI",
    "TOOLS",
    "TOOLS_BY_NAME",
    "VerbTool",
    "arguments",
    "build_server",
    "engine_kwargs",
    "input_schema",
    "output_schema",
    "run_many",
    "run_tool",
    "serve",
]
