"""A step that fails is not tried again every pass: the watcher leaves the provider
alone for a growing, capped pause. Real components: a ``local`` provider with a
hand-made applied state (outputs only), whose daemon ``connect`` once put on this
machine (its ``daemon.json``), a ``HOME`` nothing can be installed under, the control
plane on 127.0.0.1 saying nobody claims it, and the real local shell."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.daemon import host as daemon_host
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.status import status
from dreamlake.engine.verbs.watch import watch

STATE = {
    "version": 4,
    "terraform_version": "1.11.4",
    "serial": 1,
    "lineage": "00000000-0000-0000-0000-000000000000",
    "outputs": {"worker_host": {"value": "localhost", "type": "string"}},
    "resources": [],
}


def test_a_failing_restart_backs_off(
    control_plane: Any, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("not a folder\n")
    monkeypatch.setenv("HOME", str(tmp_path / "file"))  # nothing can be installed under it
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path / "tmux"))
    (tmp_path / "tmux").mkdir()
    create("broken", "local", cwd=project, probe=False)
    d = project / ".dream/providers/broken"
    (d / "terraform/terraform.tfvars").write_text(
        f'workdir = "{tmp_path}/work"\nqueues = ["default"]\nworker_name = "broken"\n'
    )
    (d / "terraform/terraform.tfstate").write_text(json.dumps(STATE))
    ident = json.loads((d / "provider.json").read_text())["id"]
    daemon_host.write(d, True, None, ident, "local", "tmux")
    assert status("broken", cwd=project).status == "unclaimed"

    events: list[dict[str, Any]] = []
    stop = threading.Event()

    def emit(e: dict[str, Any]) -> None:
        events.append(e)
        if sum(x["event"] == "pass" for x in events) == 3:
            stop.set()

    watch(all_providers=True, cwd=project, interval=0.05, drift_interval=0, emit=emit,
          stop=stop, handle_signals=False)  # fmt: skip
    kinds = [e["event"] for e in events if e.get("provider") == "broken"]
    assert kinds.count("acting") == 1, events  # tried once, in the first pass
    assert [e for e in events if e["event"] == "failed"], events
    (failed,) = [e for e in events if e["event"] == "failed"]
    assert failed["step"] == "connect" and failed["retryInSeconds"] == 30
    assert failed["nextAction"] is not None
    backoffs = [e for e in events if e["event"] == "backoff"]
    assert len(backoffs) == 2 and all(0 < b["retryInSeconds"] <= 30 for b in backoffs)
    assert [e["acted"] for e in events if e["event"] == "pass"] == [1, 0, 0]
