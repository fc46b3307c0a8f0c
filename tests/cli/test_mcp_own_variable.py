"""Over MCP (the official client over stdio, the real terraform): when ``plan`` asks
for a variable the template does not list — one the user declared in the
provider's own terraform — the ``provider_set`` call its next action offers sets it,
typed by its declaration; the next ``plan`` is ``ready``. No back and forth between
an offered edit and an ``unknown_decision`` refusal."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="needs the MCP SDK (pip install 'dreamlake[mcp]')")

from dreamlake.engine.backends.terraform.binaries import available  # noqa: E402
from dreamlake.engine.verbs.create import create  # noqa: E402
from dreamlake.engine.verbs.set_values import set_values  # noqa: E402

DREAMLAKE = Path(sys.executable).parent / "dreamlake"
BINARIES = available()
OWN = '\nvariable "team_budget" {\n  type = number\n}\n'
GOOD = 'workdir = "/srv/agent"\nqueues = ["default"]\nworker_name = "agent-1"\n'


def _scaffold(project: Path) -> Path:
    create("agent", "local", cwd=project, probe=False)
    tf = project / ".dream" / "providers" / "agent" / "terraform"
    (tf / "terraform.tfvars").write_text(GOOD)
    with open(tf / "variables.tf", "a") as f:
        f.write(OWN)
    return tf


def test_set_takes_a_variable_the_configuration_declares(project: Path) -> None:
    tf = _scaffold(project)
    res = set_values("agent", {"team_budget": "1200"}, cwd=project)
    assert res.status == "scaffolded", (res.to_json(), res.notes)
    assert "team_budget = 1200\n" in (tf / "terraform.tfvars").read_text()  # a number
    # a name nothing declares is still refused, and nothing is written
    before = (tf / "terraform.tfvars").read_bytes()
    res = set_values("agent", {"team_budgte": "1"}, cwd=project)
    assert (res.status, res.kind) == ("error", "unknown_decision")
    assert "variable its terraform declares" in (res.error or "")
    assert (tf / "terraform.tfvars").read_bytes() == before
    # a value its declared type refuses is not written either
    res = set_values("agent", {"team_budget": "lots"}, cwd=project)
    assert res.status == "error", res.to_json()
    assert (tf / "terraform.tfvars").read_bytes() == before


@pytest.mark.skipif(not BINARIES, reason="needs a terraform binary")
def test_plan_asks_provider_set_answers_plan_is_ready(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    tf = _scaffold(project)
    env = dict(os.environ, TF_CLI_CONFIG_FILE=os.devnull, TERRAFORM_BINARY=BINARIES[-1][1])
    argv = [str(DREAMLAKE)] if DREAMLAKE.is_file() else [sys.executable, "-m", "dreamlake.cli.main"]
    params = StdioServerParameters(
        command=argv[0], args=[*argv[1:], "mcp"], env=env, cwd=str(project)
    )

    async def body() -> dict[str, Any]:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                asked = await session.call_tool("provider_plan", {"name": "agent"})
                edit = asked.structured_content["nextAction"]["edit"]
                answered = await session.call_tool(
                    edit["tool"], {**edit["arguments"], "values": {"team_budget": 1200}}
                )
                planned = await session.call_tool("provider_plan", {"name": "agent"})
                return {"asked": asked, "answered": answered, "planned": planned}

    got = anyio.run(body)
    asked = got["asked"].structured_content
    assert asked["status"] == "needs_input", asked
    assert [b["key"] for b in asked["blocking"]] == ["team_budget"], asked
    answered = got["answered"].structured_content
    assert not got["answered"].is_error, answered
    assert answered["nextAction"]["tool"] == "provider_plan", answered
    assert "team_budget = 1200\n" in (tf / "terraform.tfvars").read_text()
    planned = got["planned"].structured_content
    assert planned["status"] == "ready", planned
