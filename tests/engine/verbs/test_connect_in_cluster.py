"""connect on a ``kube`` provider never opens an SSH session to the cluster's API
endpoint: its daemon runs in the cluster, launched by the control plane's Kube
launcher, and connect says so with ``lakeshore launch --provider NAME`` as the next
action. The shell factory records any attempt (there must be none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create


def test_kube_connect_points_at_the_launcher(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAKESHORE_TOKEN", "test-token")
    created = create("cluster", "kube", cwd=project)
    assert created.status in ("needs_input", "scaffolded")
    attempts: list[Any] = []

    def recorder(target: Any) -> Any:
        attempts.append(target)
        raise AssertionError("connect must not open a shell for a kube provider")

    res = connect("cluster", cwd=project, shell_factory=recorder)
    assert attempts == []
    assert res.exit_code == 0 and res.status == created.status
    # not applied yet: the cluster comes first, so the next action stays the status's own
    assert res.next_action == created.next_action
    assert any("lakeshore launch --provider cluster" in n for n in res.notes)
    assert any("does not SSH to the cluster's API endpoint" in n for n in res.notes)


def test_an_applied_cluster_is_launched_not_connected() -> None:
    from dreamlake.engine.contract.result import Run
    from dreamlake.engine.verbs.connect_in_cluster import next_action

    plan = Run(command="dreamlake provider plan -n cluster")
    assert next_action("cluster", False, plan) == plan
    launched = next_action("cluster", True, plan)
    assert launched is not None and launched.kind == "shell"
    assert launched.command == "lakeshore launch --provider cluster"
