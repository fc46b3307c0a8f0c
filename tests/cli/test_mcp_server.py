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

from dreamlake.cli import mcp_server  # noqa: E402
from dreamlake.engine.contract import (  # noqa: E402
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
        assert schema["required"] == ([] if tool.many else ["name"]), tool.name
        assert "dream_dir" in schema["properties"]
        assert not {"json", "as_json", "events"} & set(schema["properties"])
        assert callable(mcp_server._engine_fn(tool))
    create = mcp_server.input_schema(mcp_server.TOOLS[0])["properties"]
    assert {"name", "provider", "backend", "continue", "stack", "dream_dir"} == set(create)
    assert create["continue"] == {
        "type": "boolean",
        "description": create["continue"]["description"],
        "default": False,
    }
    assert mcp_server.output_schema() == json_schema()
    listing = next(t for t in mcp_server.TOOLS if t.many)
    wrapped = mcp_server.output_schema(listing)
    one = json_schema()
    assert wrapped["$defs"] == one.pop("$defs")
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
        return {
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
            assert t.inputSchema["properties"]["name"]["type"] == "string"
        assert t.outputSchema == mcp_server.output_schema(mcp_server.TOOLS_BY_NAME[t.name])
        assert t.description
    assert tools["provider_apply"].annotations.destructiveHint is True
    assert tools["provider_status"].annotations.readOnlyHint is True
    assert tools["provider_plan"].annotations.destructiveHint is False

    assert [str(r.uri) for r in got["resources"]] == [mcp_server.AGENT_LOOP_URI]
    text = got["loop"].contents[0].text
    assert "Branch on THOSE, never on the exit code" in text and "FUSE" in text

    created = got["created"]
    assert created.isError is False
    doc = created.structuredContent
    assert doc["status"] == "needs_input" and doc["nextAction"]["kind"] == "edit_then_continue"
    # exactly the document --json prints, as structured content and as text
    assert json.loads(created.content[0].text) == doc
    ProviderLifecycleResult.model_validate(doc)
    assert (project / ".dream" / "providers" / "mcp-one" / "provider.json").is_file()
    assert not (other / ".dream").exists()
    assert got["bad"].isError is True  # an unknown argument is refused by the input schema
    # list could not look (a broken .dreamrc): the contract's failure document, the
    # file named and a next action fixing it, not an SDK error
    listed = got["listed"]
    assert listed.isError is True
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
    assert "all" not in mcp_server.input_schema(by["provider_reconcile"])["properties"]
    assert mcp_server.run_many(by["provider_list"], {}, default_dream_dir=str(tmp_path)) == []
    from dreamlake.engine.verbs.create import create

    create("lab", "local", dream_dir=str(tmp_path), probe=False)
    (one,) = mcp_server.run_many(by["provider_list"], {"dream_dir": str(tmp_path)})
    assert one.provider == "lab" and one.next_action is not None
    (tmp_path / ".dreamrc").write_bytes(b"\xff\xfe")  # list cannot look: one failure document
    failed = mcp_server.run_many(by["provider_list"], {"dream_dir": str(tmp_path)})
    assert not isinstance(failed, list) and failed.status == "error"
    assert failed.next_action == EditThenContinue(
        file=str(tmp_path / ".dreamrc"), command=f"dreamlake provider list --dream-dir {tmp_path}"
    )
