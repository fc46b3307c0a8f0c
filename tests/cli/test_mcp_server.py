"""``dreamlake mcp``: the tool table read from the CLI's flags, and the server as a
client sees it over stdio (the SDK's own client starting the real command)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="needs the MCP SDK (pip install 'dreamlake[mcp]')")

from dreamlake.cli.mcp import calls as mcp_calls  # noqa: E402
from dreamlake.cli.mcp import server as mcp_server  # noqa: E402
from dreamlake.cli.mcp.next_action import call_for, with_calls_schema  # noqa: E402
from dreamlake.engine.contract.result import (  # noqa: E402
    EditThenContinue,
    ProviderLifecycleResult,
    json_schema,
)

DREAMLAKE = Path(sys.executable).parent / "dreamlake"


def test_every_tool_has_schemas_from_its_flags() -> None:
    names = [t.name for t in mcp_server.TOOLS]
    assert len(names) == len(set(names))
    for tool in mcp_server.TOOLS:
        schema = mcp_server.input_schema(tool)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        want = {"provider_list": [], "provider_reconcile": [], "provider_set": ["name", "values"]}
        assert schema["required"] == want.get(tool.name, ["name"]), tool.name
        assert "dream_dir" in schema["properties"]
        assert not {"json", "as_json", "events"} & set(schema["properties"])
        assert callable(mcp_calls._engine_fn(tool))
    status = mcp_server.input_schema(mcp_server.TOOLS_BY_NAME["provider_status"])
    assert status["properties"]["name"]["pattern"] == "^[a-z0-9][a-z0-9-]{0,62}$"
    reconcile = mcp_server.input_schema(mcp_server.TOOLS_BY_NAME["provider_reconcile"])
    assert reconcile["oneOf"] == [
        {"required": ["name"]},
        {"required": ["all"], "properties": {"all": {"const": True}}},
    ]
    create = mcp_server.input_schema(mcp_server.TOOLS[0])["properties"]
    assert {"name", "provider", "backend", "continue", "stack", "dream_dir"} == set(create)
    assert create["continue"] == {
        "type": "boolean",
        "description": create["continue"]["description"],
        "default": False,
    }
    # the full schema once (a resource); each tool's output schema outlines one result
    assert mcp_server.result_schema() == with_calls_schema(json_schema())
    one = mcp_server.output_schema()
    assert one["required"] == json_schema()["required"]
    assert one["properties"]["status"]["enum"] == json_schema()["properties"]["status"]["enum"]
    assert mcp_server.RESULT_SCHEMA_URI in one["description"]
    listing = next(t for t in mcp_server.TOOLS if t.many)
    wrapped = mcp_server.output_schema(listing)
    assert wrapped["properties"]["providers"]["items"] == one
    destructive = {t.name for t in mcp_server.TOOLS if t.destructive}
    assert destructive == {"provider_apply", "provider_destroy", "provider_delete"}
    for t in mcp_server.TOOLS:  # a destructive tool's yes is never defaulted to true
        props = mcp_server.input_schema(t)["properties"]
        assert ("yes" in props) >= t.destructive and props.get("yes", {}).get("default") in (
            None,
            False,
        )


def test_destructive_tools_need_an_explicit_yes_the_server_never_sets() -> None:
    destructive = [t for t in mcp_server.TOOLS if t.destructive]
    assert "provider_apply" in [t.name for t in destructive]
    for tool in destructive:
        yes = mcp_server.input_schema(tool)["properties"]["yes"]
        assert yes["type"] == "boolean" and yes["default"] is False
        assert "DESTRUCTIVE" in mcp_server.description(tool)
        assert mcp_server.engine_kwargs(tool, {"name": "a"}, None)["yes"] is False
        assert mcp_server.engine_kwargs(tool, {"name": "a", "yes": 1}, None)["yes"] is False
        assert mcp_server.engine_kwargs(tool, {"name": "a", "yes": True}, None)["yes"] is True


def test_server_dream_dir_is_the_default_and_an_argument_wins() -> None:
    plan = next(t for t in mcp_server.TOOLS if t.name == "provider_plan")
    assert mcp_server.engine_kwargs(plan, {"name": "a"}, "/srv") == {
        "name": "a",
        "dream_dir": "/srv",
    }
    assert mcp_server.engine_kwargs(plan, {"name": "a", "dream_dir": "/x"}, "/srv") == {
        "name": "a",
        "dream_dir": "/x",
    }


def test_a_destructive_tool_without_a_yes_flag_is_refused() -> None:
    bad = mcp_server.VerbTool(
        "provider_plan", ("provider", "plan"), "dreamlake.engine.verbs.plan:plan", destructive=True
    )
    with pytest.raises(ValueError, match="no --yes"):
        mcp_server.input_schema(bad)


def _params(cwd: Path, *extra: str) -> Any:
    from mcp import StdioServerParameters

    argv = [str(DREAMLAKE)] if DREAMLAKE.is_file() else [sys.executable, "-m", "dreamlake.cli.main"]
    return StdioServerParameters(
        command=argv[0], args=[*argv[1:], "mcp", *extra], env=dict(os.environ), cwd=str(cwd)
    )


async def _session_run(cwd: Path, body: Any, *extra: str) -> Any:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(_params(cwd, *extra), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await body(session)


def test_stdio_tools_resource_and_a_first_call(project: Path, tmp_path: Path) -> None:
    import anyio

    other = tmp_path / "elsewhere"
    other.mkdir()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".dreamrc").write_bytes(b"lakeshore:\n  url: \xff\xfe\n")

    async def body(session: Any) -> dict[str, Any]:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        resources = (await session.list_resources()).resources
        loop = await session.read_resource(resources[0].uri)
        created = await session.call_tool(
            "provider_create", {"name": "mcp-one", "provider": "local"}
        )
        bad = await session.call_tool("provider_create", {"name": "x", "nope": 1})
        listed = await session.call_tool("provider_list", {"dream_dir": str(broken)})
        enum = await session.call_tool("provider_create", {"name": "x", "backend": "chef"})
        unknown = await session.call_tool("provider_stats", {"name": "x"})
        return {
            "enum": enum,
            "unknown": unknown,
            "tools": tools,
            "resources": resources,
            "loop": loop,
            "created": created,
            "bad": bad,
            "listed": listed,
        }

    # the server's --dream-dir is the root unless a call names another
    got = anyio.run(_session_run, other, body, "--dream-dir", str(project))
    tools = got["tools"]
    assert set(tools) == {t.name for t in mcp_server.TOOLS}
    for t in tools.values():
        if t.name != "provider_list":  # the one tool over every provider
            assert t.input_schema["properties"]["name"]["type"] == "string"
        assert t.output_schema == mcp_server.output_schema(mcp_server.TOOLS_BY_NAME[t.name])
        assert t.description
    assert tools["provider_apply"].annotations.destructive_hint is True
    assert tools["provider_status"].annotations.read_only_hint is True
    assert tools["provider_plan"].annotations.destructive_hint is False

    assert [str(r.uri) for r in got["resources"]] == [
        mcp_server.AGENT_LOOP_URI,
        mcp_server.RESULT_SCHEMA_URI,
    ]
    text = got["loop"].contents[0].text
    assert "Branch on THOSE, never on the exit code" in text and "FUSE" in text

    created = got["created"]
    assert created.is_error is False
    doc = created.structured_content
    assert doc["status"] == "needs_input" and doc["nextAction"]["kind"] == "edit_then_continue"
    # the document --json prints, as structured content and as text, its next action
    # also saying which tools to call: provider_set for the edit, then the command's
    assert json.loads(created.content[0].text) == doc
    nxt = doc["nextAction"]
    assert nxt["tool"] == "provider_create"
    where = {"name": "mcp-one", "dream_dir": str(project)}  # the server's --dream-dir
    assert nxt["arguments"] == {**where, "continue": True}
    assert nxt["edit"] == {"tool": "provider_set", "arguments": where}
    plain = {**doc, "nextAction": {k: nxt[k] for k in ("kind", "file", "command")}}
    ProviderLifecycleResult.model_validate(plain)
    assert (project / ".dream" / "providers" / "mcp-one" / "provider.json").is_file()
    assert not (other / ".dream").exists()
    assert got["bad"].is_error is True  # an unknown argument is refused by the input schema
    # schema and enum failures and unknown tools: the structuredContent of a domain error
    for key, words in (
        ("bad", ["Input validation error", "nope"]),
        ("enum", ["Input validation error: backend: 'chef' is not one of"]),
        ("unknown", ["no tool 'provider_stats' (did you mean provider_status?)"]),
    ):
        refused = got[key].structured_content
        assert got[key].is_error is True and refused["status"] == "error", key
        assert refused["kind"] == "usage" and all(w in refused["error"] for w in words), refused
        assert refused["nextAction"]["kind"] == "run", key
        assert json.loads(got[key].content[0].text) == refused
    assert got["enum"].structured_content["nextAction"]["command"] == (
        "dreamlake provider create --help"
    )
    assert got["unknown"].structured_content["nextAction"]["tool"] == "provider_list"
    # list could not look (a broken .dreamrc): the contract's failure document, the
    # file named and a next action fixing it, not an SDK error
    listed = got["listed"]
    assert listed.is_error is True
    failed = json.loads(listed.content[0].text)
    assert failed["status"] == "error" and str(broken / ".dreamrc") in failed["error"]
    assert failed["nextAction"]["file"] == str(broken / ".dreamrc")
    assert failed["nextAction"]["command"].startswith("dreamlake provider list")


def test_without_the_sdk_the_command_says_what_to_install(tmp_path: Path) -> None:
    import subprocess

    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no mcp here')\n")
    env = dict(os.environ, PYTHONPATH=str(shadow.parent))
    p = subprocess.run(
        [sys.executable, "-m", "dreamlake.cli.main", "mcp"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert p.returncode == 1
    assert "pip install 'dreamlake[mcp]'" in p.stderr and p.stdout == ""


def test_status_does_not_import_the_sdk_or_rich(project: Path) -> None:
    import subprocess

    code = (
        "import sys; from dreamlake.cli.main import main; rc = main(['provider', 'status', "
        "'-n', 'x', '--json']); print([m for m in ('mcp', 'rich') if m in sys.modules], "
        "file=sys.stderr)"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert p.stderr.strip().splitlines()[-1] == "[]", p.stderr


def test_day2_tools_map_onto_the_engine(tmp_path: Path) -> None:
    """destroy never gets a yes the caller did not give; list returns one result per
    provider under the root; suspend's --timeout is the engine's drain_timeout."""
    by = mcp_server.TOOLS_BY_NAME
    kw = mcp_server.engine_kwargs(by["provider_destroy"], {"name": "lab", "yes": "true"}, None)
    assert kw == {"name": "lab", "yes": False, "dream_dir": None}
    kw = mcp_server.engine_kwargs(by["provider_suspend"], {"name": "lab", "timeout": 5}, "/r")
    assert kw["drain_timeout"] == 5 and kw["dream_dir"] == "/r"
    assert mcp_server.input_schema(by["provider_reconcile"])["properties"]["all"]["type"] == (
        "boolean"
    )
    assert mcp_server.run_many(by["provider_list"], {}, default_dream_dir=str(tmp_path)) == []
    from dreamlake.engine.verbs.create import create

    create("lab", "local", dream_dir=str(tmp_path), probe=False)
    (one,) = mcp_server.run_many(by["provider_list"], {"dream_dir": str(tmp_path)})
    assert one.provider == "lab" and one.next_action is not None
    every = mcp_server.run_many(
        by["provider_reconcile"], {"all": True}, default_dream_dir=str(tmp_path)
    )
    assert isinstance(every, list) and [r.provider for r in every] == ["lab"]
    (tmp_path / ".dreamrc").write_bytes(b"\xff\xfe")  # list cannot look: one failure document
    failed = mcp_server.run_many(by["provider_list"], {"dream_dir": str(tmp_path)})
    assert not isinstance(failed, list) and failed.status == "error"
    assert failed.next_action == EditThenContinue(
        file=str(tmp_path / ".dreamrc"), command=f"dreamlake provider list --dream-dir {tmp_path}"
    )


def test_reconcile_can_act_on_every_provider() -> None:
    """`reconcile --all` over MCP: all: true, no name; exactly one of the two."""
    tool = mcp_server.TOOLS_BY_NAME["provider_reconcile"]
    assert mcp_server.wants_many(tool, {"all": True})
    assert not mcp_server.wants_many(tool, {"name": "lab"})
    assert mcp_server.target_problem(tool, {"all": True}) is None
    assert mcp_server.target_problem(tool, {"name": "lab"}) is None
    assert mcp_server.target_problem(tool, {}) is not None
    assert mcp_server.target_problem(tool, {"all": True, "name": "lab"}) is not None
    assert "all" not in mcp_server.engine_kwargs(tool, {"all": True}, None)
    schema = mcp_server.output_schema(tool)
    assert schema["type"] == "object" and len(schema["anyOf"]) == 2
    failed = mcp_server.usage_result(tool, "give either name or all: true", {"name": "x"}, None)
    assert failed.status == "error" and failed.next_action is not None


def test_vendor_and_backend_are_enums_and_descriptions_name_only_arguments() -> None:
    import re

    create = mcp_server.input_schema(mcp_server.TOOLS_BY_NAME["provider_create"])["properties"]
    assert {"local", "ssh", "ec2", "gce", "kube"} <= set(create["provider"]["enum"])
    assert create["backend"]["enum"] == ["terraform", "pulumi"]
    for tool in mcp_server.TOOLS:
        text = mcp_server.description(tool)
        props = set(mcp_server.input_schema(tool)["properties"])
        # no command-line flag outside the `dreamlake ... --json` it is the same as
        flags = re.findall(r"(?<![\w`-])-{1,2}[a-z][a-z-]*", text.split("Same as")[0])
        assert not flags, (tool.name, flags)
        for named in re.findall(r"\b([a-z_]+): true\b", text):
            assert named in props, (tool.name, named)


@pytest.mark.parametrize(
    ("command", "call"),
    [
        ("dreamlake provider plan -n lab", ("provider_plan", {"name": "lab"})),
        (
            "dreamlake provider apply -n lab --yes  # re-run; terraform resumes",
            ("provider_apply", {"name": "lab", "yes": True}),
        ),
        (
            "dreamlake provider create -n lab --continue --dream-dir /p",
            ("provider_create", {"name": "lab", "continue": True, "dream_dir": "/p"}),
        ),
        ("dreamlake provider reconcile --all", ("provider_reconcile", {"all": True})),
        ("dreamlake provider status lab", ("provider_status", {"name": "lab"})),
        ("dreamlake pool acquire gpus", None),  # not a tool: the command stays
        ("lakeshore serve   # or set LAKESHORE_URL", None),
        ("dreamlake provider plan -n lab --bogus", None),
    ],
)
def test_a_next_action_names_its_tool_and_arguments(command: str, call: Any) -> None:
    got = call_for(command, mcp_server.call_table())
    assert got == (None if call is None else {"tool": call[0], "arguments": call[1]})


def test_progress_notifications_carry_a_sentence() -> None:
    from dreamlake.engine.contract.events import ProgressEvent

    ev = ProgressEvent(
        type="resource_start", seq=3, elapsed=1.0, verb="apply", provider="lab",
        address="null_resource.x", action="create",
    )  # fmt: skip
    assert mcp_server.event_sentence(ev) == "apply lab: create null_resource.x"
    end = ProgressEvent(type="end", seq=9, elapsed=2.0, verb="plan", provider="lab", status="ready")
    assert mcp_server.event_sentence(end) == "plan lab: done, ready"
    step = ProgressEvent(
        type="step", seq=2, elapsed=0.5, verb="plan", provider="lab", message="init"
    )
    assert mcp_server.event_sentence(step) == "plan lab: init"
    assert "{" not in mcp_server.event_sentence(step)


def test_an_agent_without_an_editor_finishes_the_decisions(project: Path) -> None:
    """Over stdio: create, then provider_set the blocking keys (the edit the next action
    names), then the next action's own tool call; progress arrives as sentences."""
    import anyio

    async def body(session: Any) -> dict[str, Any]:
        created = await session.call_tool("provider_create", {"name": "agent", "provider": "local"})
        nxt = created.structured_content["nextAction"]
        keys = [b["key"] for b in created.structured_content["blocking"]]
        values = {"workdir": "/srv/agent", "queues": ["default"], "worker_name": "agent-1"}
        refused = await session.call_tool(
            nxt["edit"]["tool"], {**nxt["edit"]["arguments"], "values": {"workdir": "rel"}}
        )
        done = await session.call_tool(
            nxt["edit"]["tool"],
            {**nxt["edit"]["arguments"], "values": {k: values[k] for k in keys}},
        )
        messages: list[Any] = []

        async def progress(p: float, total: float | None, message: str | None) -> None:
            messages.append(message)

        nxt = done.structured_content["nextAction"]
        planned = await session.call_tool(nxt["tool"], nxt["arguments"], progress_callback=progress)
        return {"refused": refused, "done": done, "planned": planned, "messages": messages}

    tfvars = project / ".dream" / "providers" / "agent" / "terraform" / "terraform.tfvars"
    got = anyio.run(_session_run, project, body)
    refused = got["refused"].structured_content
    assert got["refused"].is_error and refused["kind"] == "invalid_value"
    assert "workdir" in refused["error"] and refused["nextAction"]["file"] == str(tfvars)
    done = got["done"].structured_content
    assert done["status"] == "needs_input" or done["blocking"] == [], done
    assert done["nextAction"]["tool"] == "provider_plan"
    assert done["nextAction"]["arguments"] == {"name": "agent"}
    text = tfvars.read_text()
    assert 'workdir = "/srv/agent"' in text and 'queues = ["default"]' in text
    assert "# Where the daemon keeps its work" in text  # the person's file, comments kept
    if got["planned"].structured_content["status"] != "error":  # terraform ran
        assert got["messages"] and all(m and not m.startswith("{") for m in got["messages"])


def test_the_agent_loop_resource_reads_as_the_spec_loop() -> None:
    """Step 4 goes back to step 1; the FUSE rule is its own paragraph, not a step."""
    from dreamlake.cli.mcp.agent_loop import LOOP, TEXT

    assert "3. nextAction == null → done. Stop.\n" in LOOP
    assert "4. Go to 1.\n\nFUSE: if two consecutive runs" in LOOP
    assert "Go to\n1." not in TEXT
    assert "provider_set" in TEXT and "dreamlake/event" in TEXT


def test_reconcile_over_stdio_one_or_all_validates_against_its_schema(project: Path) -> None:
    """The client checks structured content against the tool's output schema: both
    answers of provider_reconcile (one provider, every provider) pass it."""
    import anyio

    async def body(session: Any) -> dict[str, Any]:
        await session.list_tools()  # the client keeps the output schemas to check against
        await session.call_tool("provider_create", {"name": "rec", "provider": "local"})
        one = await session.call_tool("provider_reconcile", {"name": "rec"})
        every = await session.call_tool("provider_reconcile", {"all": True})
        neither = await session.call_tool("provider_reconcile", {})
        return {"one": one, "every": every, "neither": neither}

    got = anyio.run(_session_run, project, body, "--dream-dir", str(project))
    assert got["one"].structured_content["provider"] == "rec"
    providers = got["every"].structured_content["providers"]
    assert [p["provider"] for p in providers] == ["rec"]
    neither = got["neither"].structured_content
    assert got["neither"].is_error and neither["status"] == "error"
    assert "all: true" in neither["error"] and neither["nextAction"]["command"]


def test_tools_list_is_compact_and_the_client_still_validates(project: Path) -> None:
    """tools/list carries each tool's output schema in outline, never the contract's
    full schema once per tool; that schema is one resource. The SDK's client checks
    every structured content against the outline (a successful call it could not
    validate would raise), and each document is one the full schema admits."""
    import anyio
    import jsonschema

    async def body(session: Any) -> dict[str, Any]:
        listed = await session.list_tools()
        full = await session.read_resource(mcp_server.RESULT_SCHEMA_URI)
        docs = [
            await session.call_tool("provider_create", {"name": "slim", "provider": "local"}),
            await session.call_tool("provider_status", {"name": "slim"}),
            await session.call_tool("provider_plan", {"name": "slim"}),
            await session.call_tool("provider_list", {}),
            await session.call_tool("provider_reconcile", {"all": True}),
        ]
        return {"listed": listed, "full": full, "docs": docs}

    got = anyio.run(_session_run, project, body, "--dream-dir", str(project))
    wire = got["listed"].model_dump_json(by_alias=True, exclude_none=True)
    assert len(wire) < 40_000, len(wire)  # thirteen tools; the full schema alone is ~13 KB
    for tool in got["listed"].tools:
        assert len(json.dumps(tool.output_schema)) < 2_000, tool.name
        assert "$defs" not in json.dumps(tool.output_schema) or tool.name == "provider_reconcile"
    content = got["full"].contents[0]
    assert content.mime_type == "application/schema+json"
    full = json.loads(content.text)
    assert full == with_calls_schema(json_schema())
    for res in got["docs"]:
        assert not res.is_error, res  # validated by the client against the outline
        doc = res.structured_content
        for one in doc.get("providers", [doc]):
            jsonschema.validate(one, full)
