"""A ``reconcile`` interrupted with its process (a watcher killed mid-step) is
finished by the next watcher when re-running it needs no person's yes; one in
flight is left alone, and one a person said yes to is only reported.

A ``local`` provider with a hand-made applied state (outputs only), target
``suspended``, a ``HOME`` with no daemon installed and no tmux server: the re-run
finds the kept state gone and says so, and the provider no longer reads
``applying``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine import watch  # the public name an embedding program uses
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.status import status
from dreamlake.engine.world.intent import write_intent

DEAD_PID = 2**22 + 17
STATE = {
    "version": 4,
    "terraform_version": "1.11.4",
    "serial": 1,
    "lineage": "00000000-0000-0000-0000-000000000000",
    "outputs": {"worker_host": {"value": "localhost", "type": "string"}},
    "resources": [],
}


@pytest.fixture
def provider(tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path / "tmux"))
    monkeypatch.setenv("LAKESHORE_URL", "http://127.0.0.1:9")
    (tmp_path / "home").mkdir()
    (tmp_path / "tmux").mkdir()
    create("box", "local", cwd=project, probe=False)
    d = project / ".dream/providers/box"
    (d / "terraform/terraform.tfvars").write_text(
        f'workdir = "{tmp_path}/work"\nqueues = ["default"]\nworker_name = "box"\n'
        'target_status = "suspended"\n'
    )
    (d / "terraform/terraform.tfstate").write_text(json.dumps(STATE))
    return d


def _pass(project: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    watch(all_providers=True, cwd=project, once=True, drift_interval=0, emit=events.append,
          handle_signals=False)  # fmt: skip
    return events


def test_an_interrupted_reconcile_is_finished(provider: Path, project: Path) -> None:
    write_intent(provider, "reconcile", step="resume", pid=DEAD_PID)
    assert status("box", cwd=project).status == "applying"
    events = _pass(project)
    (acting,) = [e for e in events if e["event"] == "acting"]
    assert acting["step"] == "finish"
    assert status("box", cwd=project).status != "applying"


def test_one_in_flight_is_left_alone(provider: Path, project: Path) -> None:
    other = subprocess.Popen(["sleep", "60"])  # another live process holds the record
    try:
        write_intent(provider, "reconcile", step="resume", pid=other.pid)
        events = _pass(project)
    finally:
        other.kill()
        other.wait()
    assert not [e for e in events if e["event"] == "acting"]
    (state,) = [e for e in events if e["event"] == "state"]
    assert (state["status"], state["does"]) == ("applying", "nothing")


def test_one_a_person_said_yes_to_is_reported(provider: Path, project: Path) -> None:
    record = provider / "provider.json"
    record.write_text(json.dumps({**json.loads(record.read_text()), "gating": ["resume"]}))
    write_intent(provider, "reconcile", step="resume", yes=True, pid=DEAD_PID)
    events = _pass(project)
    assert not [e for e in events if e["event"] == "acting"]
    (state,) = [e for e in events if e["event"] == "state"]
    assert state["status"] == "applying" and state["nextAction"]["approval"] is True
