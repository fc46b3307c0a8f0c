"""``status`` reports the supervisor running the daemon, asked from the host as
``connect`` asks it: a real tmux session on this machine for a ``local`` provider."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.supervision import parse_running
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status


def test_parse_running_prefers_systemd() -> None:
    assert parse_running("running_tmux=yes\nrunning_user=yes\n") == "systemd-user"
    assert parse_running("running_tmux=yes\n") == "tmux"
    assert parse_running("tmux=yes\n") is None


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (scripts/test installs it)")
@pytest.mark.skipif(not available(), reason="needs a terraform binary")
def test_status_reports_the_supervisor_running_the_daemon(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))  # a tmux server of this test's own
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    name = f"sv-{uuid.uuid4().hex[:8]}"
    dd = str(project)
    create(name, "local", dream_dir=dd, probe=False)
    (project / f".dream/providers/{name}/terraform/terraform.tfvars").write_text(
        f'workdir = "{tmp_path}/w"\nqueues = ["a"]\nworker_name = "{name}-box"\n'
    )
    assert plan(name, dream_dir=dd).status == "ready"
    assert apply(name, yes=True, dream_dir=dd).outputs

    before = status(name, dream_dir=dd, probe=False)
    assert before.supervisor is None and "no-supervisor" not in (before.degraded or [])

    session = f"nymph-{name}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "sleep 120"], check=True)
    try:
        res = status(name, dream_dir=dd, probe=False)
        assert res.supervisor == "tmux" and res.host == "localhost"
        assert "no-supervisor" in (res.degraded or [])
    finally:
        subprocess.run(["tmux", "kill-session", "-t", f"={session}"], check=False)
    after = status(name, dream_dir=dd, probe=False)
    assert after.supervisor is None
