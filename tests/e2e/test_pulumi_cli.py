"""The CLI on the pulumi backend, end to end, without the pulumi CLI: create
reports the decisions in Pulumi.<name>.yaml, an agent edits them, status derives
`scaffolded`, and plan stops with `no_binary` and a shell action that installs
pulumi (status keeps working throughout). Runs the real `dreamlake` entry point
with stdin closed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _run(project: Path, *args: str, path: str) -> tuple[int, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PULUMI_")}
    env["PATH"] = path
    env["PULUMI_HOME"] = str(project / ".no-pulumi-home")
    p = subprocess.run(
        [sys.executable, "-m", "dreamlake.cli.main", "provider", *args, "--json"],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return p.returncode, json.loads(p.stdout)


@pytest.fixture
def no_pulumi_path(tmp_path: Path) -> str:
    """A PATH without pulumi (only the python running the tests)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").symlink_to(sys.executable)
    return str(bindir)


def test_create_status_plan_without_the_pulumi_cli(project: Path, no_pulumi_path: str) -> None:
    rc, res = _run(
        project,
        "create",
        "-n",
        "lab",
        "--provider",
        "local",
        "--backend",
        "pulumi",
        path=no_pulumi_path,
    )
    assert rc == 0 and res["status"] == "needs_input"
    stack_file = Path(res["nextAction"]["file"])
    assert stack_file == project / ".dream/providers/lab/pulumi/Pulumi.lab.yaml"
    assert [(b["key"], b["reason"]) for b in res["blocking"]] == [
        ("workdir", "unset"),
        ("queues", "unset"),
        ("worker_name", "placeholder"),
    ]
    record = json.loads((project / ".dream/providers/lab/provider.json").read_text())
    assert record["backend"] == "pulumi"

    text = stack_file.read_text()
    text = text.replace("# dreamlake:workdir: /var/lib/nymph", "dreamlake:workdir: /srv/nymph")
    text = text.replace("# dreamlake:queues: [default]", "dreamlake:queues: [default]")
    stack_file.write_text(text.replace("CHANGE-ME", "lab-box"))

    rc, res = _run(project, "status", "-n", "lab", path=no_pulumi_path)
    assert rc == 0 and res["status"] == "scaffolded"
    assert res["nextAction"] == {"kind": "run", "command": "dreamlake provider plan -n lab"}

    rc, res = _run(project, "plan", "-n", "lab", path=no_pulumi_path)
    assert rc == 1 and res["status"] == "error" and res["kind"] == "no_binary"
    # installing software is a person's call (flagged), by the SDK's own installer
    nxt = res["nextAction"]
    assert nxt["kind"] == "shell" and nxt["approval"] is True, nxt
    assert "PulumiCommand.install()" in nxt["command"], nxt

    rc, res = _run(project, "status", "-n", "lab", path=no_pulumi_path)
    assert rc == 0 and res["status"] == "scaffolded"
