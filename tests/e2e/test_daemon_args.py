"""The `daemon_args` the `local` template advertises is a command line that works: run
as given (with the control plane in the environment) it claims the provider in a real
`lakeshore serve`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.demo import EmbeddedServer
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.world import lakeshore

BINARIES = available()
BIN = Path(sys.executable).parent


@pytest.mark.skipif(not BINARIES, reason="needs a terraform binary")
def test_local_daemon_args_claim_the_provider(
    project: Path, control_plane: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERRAFORM_BINARY", BINARIES[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    dd = str(project)
    create("dalab", "local", dream_dir=dd, probe=False)
    tfvars = project / ".dream/providers/dalab/terraform/terraform.tfvars"
    work = project / "work"
    tfvars.write_text(
        f'workdir = "{work}"\nqueues = ["gpu", "cpu", "gpu"]\nworker_name = "dalab-box"\n'
    )
    assert plan("dalab", dream_dir=dd).status == "ready"
    res = apply("dalab", yes=True, dream_dir=dd)
    assert res.outputs is not None, res.to_json()
    argv = list(res.outputs["daemon_args"])
    assert argv[0] == "nymph"
    work.mkdir()
    proc = subprocess.Popen(
        [str(BIN / argv[0]), *argv[1:]],
        env={**os.environ, **control_plane.env()},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        cp = lakeshore.resolve_control_plane(project)
        deadline = time.monotonic() + 20
        claim = None
        while time.monotonic() < deadline and proc.poll() is None:
            claim = lakeshore.fetch_claims(cp, "dalab")
            if claim is not None and claim.live:
                break
            time.sleep(0.3)
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert claim is not None and claim.live == 1
        assert claim.instances == ["dalab-box"]
        assert claim.workers[0].queues == ["gpu", "cpu"]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
