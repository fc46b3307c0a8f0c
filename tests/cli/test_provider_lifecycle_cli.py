"""The day-2 commands through the real CLI (``python -m dreamlake.cli.main``, stdin
closed): registered, bad flags are one JSON error with a nextAction, an empty root
reconciles to nothing, and pool status prints a table or JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_module

DREAMLAKE = [sys.executable, "-m", "dreamlake.cli.main"]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m dreamlake.cli.main ARGS`` forked from a server with the imports
    done (``tests/cli_fork.py``): a process of its own, as a subprocess is."""
    return run_module(
        DREAMLAKE[-1], args, cwd=cwd, stdin=subprocess.DEVNULL, text=True, timeout=120,
        env=os.environ.copy(),
    )  # fmt: skip


def test_commands_are_registered(project: Path) -> None:
    p = run("provider", "--help", cwd=project)
    assert p.returncode == 0
    for verb in ("suspend", "resume", "reconcile"):
        assert verb in p.stdout
    p = run("pool", "--help", cwd=project)
    assert p.returncode == 0
    for verb in ("acquire", "release", "status"):
        assert verb in p.stdout


def test_reconcile_needs_a_name_or_all(project: Path) -> None:
    p = run("provider", "reconcile", "--json", cwd=project)
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert (doc["status"], doc["kind"]) == ("error", "usage")
    # Nobody asked for every provider: the help, not --all.
    assert doc["nextAction"]["command"] == "dreamlake provider reconcile --help"


def test_reconcile_with_a_name_and_all_keeps_the_name(project: Path) -> None:
    p = run("provider", "reconcile", "-n", "lab", "--all", "--json", cwd=project)
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert (doc["status"], doc["kind"], doc["provider"]) == ("error", "usage", "lab")
    assert doc["nextAction"]["command"] == "dreamlake provider reconcile -n lab"
    p = run("provider", "reconcile", "-n", "x;y", "--all", "--json", cwd=project)
    assert json.loads(p.stdout)["nextAction"]["command"] == "dreamlake provider reconcile --help"


def test_reconcile_all_on_an_empty_root(project: Path) -> None:
    p = run("provider", "reconcile", "--all", "--json", cwd=project)
    assert (p.returncode, json.loads(p.stdout)) == (0, {"providers": []})
    p = run("provider", "reconcile", "--all", cwd=project)
    assert "nothing to reconcile" in p.stdout


def test_suspend_unknown_provider_is_an_error_with_a_next_action(project: Path) -> None:
    p = run("provider", "suspend", "-n", "ghost", "--json", cwd=project)
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["status"] == "error"
    assert doc["nextAction"]["kind"] == "run"


def test_suspend_before_anything_exists_touches_nothing(project: Path) -> None:
    run("provider", "create", "-n", "lab", "--provider", "local", "--json", cwd=project)
    tfvars = project / ".dream" / "providers" / "lab" / "terraform" / "terraform.tfvars"
    before = tfvars.read_text()
    p = run("provider", "suspend", "-n", "lab", "--json", cwd=project)
    doc = json.loads(p.stdout)
    assert (p.returncode, doc["status"], doc["files"]) == (0, "needs_input", []), doc
    assert tfvars.read_text() == before


def test_pool_status_table_and_json(project: Path) -> None:
    run("provider", "create", "-n", "m1", "--provider", "ssh", "--json", cwd=project)
    pj = project / ".dream" / "providers" / "m1" / "provider.json"
    record = json.loads(pj.read_text())
    record["pool"] = "gpu"
    pj.write_text(json.dumps(record))
    p = run("pool", "status", "gpu", cwd=project)
    assert p.returncode == 0, p.stderr
    assert "pool gpu: 0 free, 1 taken" in p.stdout
    assert "m1" in p.stdout and "active" in p.stdout
    doc = json.loads(run("pool", "status", "gpu", "--json", cwd=project).stdout)
    assert doc["members"] == [
        {"provider": "m1", "vendor": "ssh", "target": "active", "status": "needs_input"}
    ]
    p = run("pool", "status", "none-here", cwd=project)
    assert "has no members" in p.stdout


def test_reconcile_all_json_is_the_shape_mcp_answers(project: Path) -> None:
    """``reconcile --all --json`` prints ``{"providers": [...]}``, the document the MCP
    tool answers, valid against that tool's output schema."""
    jsonschema = pytest.importorskip("jsonschema")
    from dreamlake.cli.mcp.server import TOOLS_BY_NAME, output_schema

    for name in ("one", "two"):
        run("provider", "create", "-n", name, "--provider", "local", "--json", cwd=project)
    p = run("provider", "reconcile", "--all", "--json", cwd=project)
    doc = json.loads(p.stdout)
    assert [d["provider"] for d in doc["providers"]] == ["one", "two"], doc
    jsonschema.validate(doc, output_schema(TOOLS_BY_NAME["provider_reconcile"]))
