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

import io
import json
import os
import sys
from typing import Any

from dreamlake.engine.contract.result import ProviderLifecycleResult

from .calls import (
    EVENT_META,
    call_table,
    engine_kwargs,
    event_sentence,
    run_many,
    run_tool,
    schema_result,
    target_problem,
    unknown_tool_result,
    usage_result,
    wants_many,
)
from .next_action import wire_with_calls
from .schemas import (
    RESULT_SCHEMA_URI,
    arguments,
    description,
    input_schema,
    output_schema,
    result_schema,
)
from .tools import AGENT_LOOP_URI, TOOLS, TOOLS_BY_NAME, VerbTool

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
                ),
                types.Resource(
                    uri=RESULT_SCHEMA_URI,
                    name="result-schema",
                    title="The result document's JSON Schema",
                    description="Every member of the document each tool returns (a tool's "
                    "output schema outlines it), its next action with the tool to call.",
                    mime_type="application/schema+json",
                ),
            ]
        )

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        if uri == AGENT_LOOP_URI:
            text, mime = TEXT, "text/markdown"
        elif uri == RESULT_SCHEMA_URI:
            text, mime = json.dumps(result_schema(), indent=2), "application/schema+json"
        else:
            # code 0, the error the server has always answered an unknown resource with
            raise MCPError(
                code=0,
                message=f"no resource {params.uri}; resources: {AGENT_LOOP_URI}, "
                f"{RESULT_SCHEMA_URI}",
            )
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
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
    "RESULT_SCHEMA_URI",
    "TOOLS",
    "TOOLS_BY_NAME",
    "VerbTool",
    "arguments",
    "build_server",
    "engine_kwargs",
    "input_schema",
    "output_schema",
    "result_schema",
    "run_many",
    "run_tool",
    "serve",
]
