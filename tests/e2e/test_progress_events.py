"""``--events`` on a real plan and apply: NDJSON progress events on stderr, in
order, each valid against the event schema, ending before the result on stdout
(which is the same document ``--json`` alone prints). The `local` provider gets
two slow resources (terraform's built-in ``terraform_data``) so apply has
resource-level work to report. The `ec2` provider's plan and apply stream theirs in
its journey (test_ec2_journey.py, against an AWS API on 127.0.0.1 with the real
``hashicorp/aws`` provider), which already runs that plan and apply."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.backends.terraform.binaries import at_least, available
from dreamlake.engine.contract.result import ProviderLifecycleResult
from progress_stream import check_stream, run_with_events

BIN = Path(sys.executable).parent
DREAMLAKE = BIN / "dreamlake"
# terraform_data is built in from terraform 1.4 on
MODERN = [(v, p) for v, p in available() if at_least(v, "1.4.0")]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DREAMLAKE.is_file(), reason=f"needs the console script {DREAMLAKE}"),
]

SLOW_TF = """
resource "terraform_data" "slow" {
  count = 2
  provisioner "local-exec" {
    command = "sleep 1"
  }
}
"""


def run_events(env: dict[str, str], cwd: Path, *args: str) -> tuple[list[dict[str, Any]], Any]:
    """``dreamlake provider <args>`` with --json --events: the events, then the result."""
    _, events, doc = run_with_events([str(DREAMLAKE), "provider", *args], cwd, env)
    return events, doc


@pytest.mark.skipif(not MODERN, reason="needs a terraform binary >= 1.4 (terraform_data)")
def test_local_plan_and_apply_stream_events(project: Path, tmp_path: Path) -> None:
    env = dict(os.environ, TERRAFORM_BINARY=MODERN[-1][1], TF_CLI_CONFIG_FILE=os.devnull)
    events, doc = run_events(env, project, "create", "-n", "ev", "--provider", "local")
    assert doc["status"] == "needs_input"
    check_stream(events, "create", "needs_input")
    tf = Path(doc["dir"]) / "terraform"
    (tf / "terraform.tfvars").write_text(
        f'workdir = "{tmp_path / "work"}"\nqueues = ["default"]\nworker_name = "ev-1"\n'
    )
    (tf / "slow.tf").write_text(SLOW_TF)

    events, doc = run_events(env, project, "plan", "-n", "ev")
    assert doc["status"] == "ready", doc
    plan = check_stream(events, "plan", "ready")
    # A first plan initialises; terraform's plan validates (no separate validate run).
    assert [e.step for e in plan if e.type == "step"] == ["init", "plan"]
    planned = {e.address for e in plan if e.type == "resource_planned"}
    assert planned == {"terraform_data.slow[0]", "terraform_data.slow[1]"}
    summary = next(e for e in plan if e.type == "summary")
    assert summary.changes and summary.changes["add"] == 2

    events, doc = run_events(env, project, "apply", "-n", "ev", "--yes")
    assert doc["status"] == "applied", doc
    apply = check_stream(events, "apply", "applied")
    step = next(e for e in apply if e.type == "step")
    assert (step.step, step.total) == ("apply", 2)
    for addr in planned:
        mine = [e for e in apply if e.address == addr]
        kinds = [e.type for e in mine]
        assert kinds[0] in ("resource_planned", "resource_start") and kinds[-1] == "resource_done"
        assert kinds.index("resource_start") < kinds.index("resource_done")
        done = mine[-1]
        assert done.action == "create" and done.resource_elapsed is not None
        assert done.resource_elapsed >= 1

    # stdout alone is exactly what --json prints: the events are on stderr only
    proc = subprocess.run(
        [str(DREAMLAKE), "provider", "status", "-n", "ev", "--json", "--events"],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    status = ProviderLifecycleResult.model_validate(json.loads(proc.stdout)).status
    check_stream([json.loads(ln) for ln in proc.stderr.splitlines()], "status", status)
