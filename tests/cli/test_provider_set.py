"""``dreamlake provider set``: decision values into the provider's own file (tfvars,
stack file, adopt.json), typed, judged by the decision scan, the rest kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_module
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.set_values import set_values

DREAMLAKE = [sys.executable, "-m", "dreamlake.cli.main"]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m dreamlake.cli.main ARGS`` forked from a server with the imports
    done (``tests/cli_fork.py``): a process of its own, as a subprocess is."""
    return run_module(
        DREAMLAKE[-1], args, cwd=cwd, stdin=subprocess.DEVNULL, text=True, timeout=60,
        env=dict(os.environ),
    )  # fmt: skip


def test_set_settles_terraform_decisions_and_returns_the_continue_document(
    project: Path,
) -> None:
    assert (
        run("provider", "create", "-n", "lab", "--provider", "local", cwd=project).returncode == 0
    )
    tfvars = project / ".dream" / "providers" / "lab" / "terraform" / "terraform.tfvars"
    before = tfvars.read_text()
    p = run("provider", "set", "lab", "workdir=rel", "--json", cwd=project)  # refused
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["status"] == "error" and doc["kind"] == "invalid_value"
    assert "workdir" in doc["error"] and "absolute" in doc["error"]
    assert doc["nextAction"] == {
        "kind": "edit_then_continue",
        "file": str(tfvars),
        "command": "dreamlake provider create -n lab --continue",
    }
    assert tfvars.read_text() == before  # nothing lost, nothing half-written
    p = run(
        "provider", "set", "-n", "lab", "workdir=/srv/lab", "queues=default,gpu",
        "worker_name=lab-1", "--json", cwd=project,
    )  # fmt: skip
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["blocking"] == [], doc
    assert doc["nextAction"]["command"] == "dreamlake provider plan -n lab"
    again = json.loads(
        run("provider", "create", "-n", "lab", "--continue", "--json", cwd=project).stdout
    )
    assert {k: v for k, v in again.items() if k != "notes"} == {
        k: v for k, v in doc.items() if k != "notes"
    }
    text = tfvars.read_text()
    assert 'queues = ["default", "gpu"]' in text and 'workdir = "/srv/lab"' in text
    assert "# Where the daemon keeps its work" in text  # the comments a person reads
    p = run("provider", "set", "-n", "lab", "nope=1", cwd=project)
    assert p.returncode == 1 and "not a decision" in p.stderr and "workdir" in p.stderr
    p = run("provider", "set", "-n", "lab", "justaword", cwd=project)
    assert p.returncode == 1 and "Traceback" not in p.stderr


def test_set_writes_the_pulumi_stack_file(tmp_path: Path) -> None:
    dd = str(tmp_path)
    create("pl", "local", backend="pulumi", dream_dir=dd, probe=False)
    stack = tmp_path / ".dream" / "providers" / "pl" / "pulumi" / "Pulumi.pl.yaml"
    res = set_values(
        "pl",
        {"workdir": "/srv/pl", "queues": "default", "worker_name": "pl-1"},
        dream_dir=dd,
    )
    assert res.status != "error" and res.blocking == [], res.to_json()
    import yaml

    config = yaml.safe_load(stack.read_text())["config"]
    project = next(k.split(":")[0] for k in config)
    assert config[f"{project}:queues"] == ["default"]
    assert config[f"{project}:workdir"] == "/srv/pl"


def test_set_writes_adopt_json_with_its_types(tmp_path: Path) -> None:
    dd = str(tmp_path)
    create("box", "ssh", dream_dir=dd, probe=False)
    adopt = tmp_path / ".dream" / "providers" / "box" / "adopt.json"
    res = set_values("box", {"port": "x"}, dream_dir=dd)
    assert res.status == "error" and "port" in (res.error or "")
    res = set_values(
        "box", {"host": "127.0.0.1", "user": "me", "port": "2222", "queues": "a,b"}, dream_dir=dd
    )
    data = json.loads(adopt.read_text())
    assert data["port"] == 2222 and data["queues"] == ["a", "b"] and data["host"] == "127.0.0.1"
    assert list(data)[:3] == ["host", "user", "port"]
    assert res.status != "error", res.to_json()


@pytest.mark.parametrize("name", ["x" * 5000, "../etc", "a;b"])
def test_set_on_a_bad_name_is_an_error_not_a_traceback(name: str, tmp_path: Path) -> None:
    res = set_values(name, {"k": "v"}, dream_dir=str(tmp_path))
    assert res.status == "error" and res.next_action is not None
