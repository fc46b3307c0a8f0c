"""An agent over MCP: the SDK's client starts ``dreamlake mcp`` on stdio and walks a
`local` provider from ``provider_create`` to ``connected`` following ``nextAction``
only — the tool and arguments each one names, decisions settled with the
``provider_set`` call it names (no file editor) — with the real terraform and a real
``lakeshore serve`` on 127.0.0.1. On the way, the destructive tool called without
``yes`` does nothing and says so, and the long calls report progress notifications:
a sentence in ``message``, the schema-valid event in ``_meta``."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.contract.events import ProgressEvent

mcp = pytest.importorskip("mcp", reason="needs the MCP SDK (pip install 'dreamlake[mcp]')")

DREAMLAKE = Path(sys.executable).parent / "dreamlake"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not available(), reason="needs a terraform binary"),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (the local supervisor)"),
    pytest.mark.skipif(not DREAMLAKE.is_file(), reason=f"needs the console script {DREAMLAKE}"),
]


def tool_call(command: str, tools: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A next action's command as the tool call it names: `dreamlake provider <verb>`
    is `provider_<verb>`; flags are arguments by their long name (a bare flag is
    true), typed by the tool's own input schema."""
    argv = shlex.split(command)
    assert argv[:2] == ["dreamlake", "provider"], command
    name = f"provider_{argv[2]}"
    props = tools[name].input_schema["properties"]
    args: dict[str, Any] = {}
    rest = argv[3:]
    while rest:
        flag = rest.pop(0)
        key = "name" if flag == "-n" else flag.lstrip("-").replace("-", "_")
        assert key in props, f"{command}: {flag} is not an argument of {name}"
        args[key] = True if props[key]["type"] == "boolean" else rest.pop(0)
    return name, args


def test_agent_drives_local_to_connected_over_mcp(
    control_plane: Any, project: Path, tmp_path: Path
) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    name = f"mcp-{secrets.token_hex(3)}"
    answers = {"workdir": str(tmp_path / "work"), "queues": ["default"], "worker_name": name}
    env = dict(os.environ)
    params = StdioServerParameters(command=str(DREAMLAKE), args=["mcp"], env=env, cwd=project)
    statuses: list[str] = []
    events: dict[str, list[dict[str, Any]]] = {}
    sentences: dict[str, list[str]] = {}
    refused: dict[str, Any] = {}
    current: list[str] = [""]

    async def on_message(message: Any) -> None:
        """Every notification: a progress one carries the event in its _meta."""
        import mcp_types

        if isinstance(message, mcp_types.ProgressNotification):
            meta = message.params.meta or {}
            events.setdefault(current[0], []).append(meta["dreamlake/event"])

    async def agent() -> dict[str, Any]:
        log = (tmp_path / "server.log").open("w")
        async with (
            stdio_client(params, errlog=log) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            command = f"dreamlake provider create -n {name} --provider local"
            doc: dict[str, Any] = {}
            previous: list[str] | None = None
            action: dict[str, Any] = {}
            for _ in range(12):
                tool, args = tool_call(command, tools)
                if action.get("tool"):  # the call the next action names, not parsed by us
                    assert (action["tool"], action["arguments"]) == (tool, args), action
                    tool, args = action["tool"], action["arguments"]
                if tool == "provider_apply" and not refused:
                    # The person's "yes" is in the command; first, the same call without it.
                    bare = {k: v for k, v in args.items() if k != "yes"}
                    res = await session.call_tool(tool, bare)
                    refused.update(res.structured_content)
                    refused["said"] = "\n".join(c.text for c in res.content[1:])
                    refused["state_after"] = (
                        Path(res.structured_content["dir"]) / "terraform" / "terraform.tfstate"
                    ).exists()
                said: list[str] = []

                async def on_progress(
                    progress: float, total: float | None, message: str | None, said: Any = said
                ) -> None:
                    said.append(message or "")

                current[0] = tool
                events[tool] = []
                res = await session.call_tool(tool, args, progress_callback=on_progress)
                assert res.is_error is False, res.content
                doc = res.structured_content
                assert json.loads(res.content[0].text) == doc
                sentences[tool] = said
                statuses.append(doc["status"])
                keys = sorted(b["key"] for b in doc.get("blocking") or [])
                if keys and keys == previous:
                    pytest.fail(f"FUSE: blocked twice on {keys}: {doc}")
                previous = keys
                action = doc["nextAction"]
                if action is None:
                    break
                assert action["kind"] != "shell", doc
                if action["kind"] == "edit_then_continue":
                    edit = action["edit"]  # no editor: the provider_set call it names
                    values = {b["key"]: answers[b["key"]] for b in doc["blocking"]}
                    res = await session.call_tool(
                        edit["tool"], {**edit["arguments"], "values": values}
                    )
                    assert res.is_error is False, res.content
                    assert res.structured_content["blocking"] == [], res.structured_content
                command = action["command"]
            else:
                pytest.fail(f"the loop did not settle: {statuses}")
            return doc

    try:
        doc = anyio.run(agent)
        log_text = (tmp_path / "server.log").read_text()
        assert doc["status"] == "connected", (statuses, doc, log_text[-3000:])
        assert statuses[0] == "needs_input"
        assert {"scaffolded", "ready", "applied"} <= set(statuses), statuses

        # apply without yes: nothing touched, and the document says so
        assert refused["status"] == "needs_input", refused
        assert refused["nextAction"]["command"].endswith("--yes")
        assert refused["files"] == [] and refused["state_after"] is False, refused
        assert "nothing was touched" in refused["said"], refused
        assert "Nothing was done" in refused["said"] and "yes: true" in refused["said"]

        # progress notifications: a sentence each, and the same events --events writes,
        # in order, in _meta
        for tool in ("provider_plan", "provider_apply", "provider_connect"):
            assert sentences[tool] and all(m and not m.startswith("{") for m in sentences[tool]), (
                sentences[tool]
            )
            got = events[tool]
            assert got and got[0]["type"] == "start" and got[-1]["type"] == "end", got
            assert [e["seq"] for e in got] == list(range(1, len(got) + 1))
            for e in got:
                ProgressEvent.model_validate(e)
        steps = [e.get("step") for e in events["provider_plan"] if e["type"] == "step"]
        assert steps == ["init", "plan"], events["provider_plan"]
        connect_steps = {e.get("step") for e in events["provider_connect"] if e["type"] == "step"}
        assert {"connect", "start", "wait"} <= connect_steps, events["provider_connect"]
    finally:
        from daemon_keys import daemon_key
        from dreamlake.engine.daemon import start as supervise
        from dreamlake.engine.remote import LocalShell

        with contextlib.suppress(Exception):
            key = daemon_key(project, name)
            supervise.stop(LocalShell(), key)
            shutil.rmtree(Path.home() / ".dreamlake" / "nymph" / key, ignore_errors=True)
