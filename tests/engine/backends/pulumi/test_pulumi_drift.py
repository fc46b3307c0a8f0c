"""The pulumi drift check: ``preview --refresh`` through the Automation API.

* The parser reads a CONSTRUCTED event stream (a double: ``pulumi.automation``'s own
  event types, built here as a refresh reports them).
* The flow runs the SDK's own LocalWorkspace / Stack code against the STAND-IN for the
  ``pulumi`` CLI (``pulumi_cli_standin.py``, a double: the CLI is not installable
  here), whose cloud is the double ``$PULUMI_STANDIN_CLOUD``: the verb records what
  the refresh found, ``status`` reads it, and an update drops it.
* Against the real ``pulumi`` CLI it runs wherever one is on PATH; here it is skipped.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from dreamlake.engine.backends.pulumi import PulumiBackend
from dreamlake.engine.backends.pulumi.drift import DRIFT_FILE, check_drift
from dreamlake.engine.backends.pulumi.driftevents import Drifted, refresh_drift
from dreamlake.engine.backends.pulumi.project import PulumiProject
from dreamlake.engine.backends.pulumi.state import BackendFiles
from dreamlake.engine.contract import events
from dreamlake.engine.contract.events import ProgressEvent
from dreamlake.engine.verbs.drift import drift
from dreamlake.engine.verbs.status import status
from pulumi.automation import events as ev
from pulumi_helpers import LOCAL_OK, write_provider
from test_pulumi_automation import standin as standin  # the fixture, shared

URN = "urn:pulumi:lab::dreamlake::aws:ec2/securityGroup:SecurityGroup::web"
STACK = "urn:pulumi:lab::dreamlake::pulumi:pulumi:Stack::dreamlake-lab"


def _state(urn: str, typ: str, outputs: dict[str, object]) -> ev.StepEventStateMetadata:
    return ev.StepEventStateMetadata(
        type=typ, urn=urn, id="x", parent="", provider="", outputs=outputs
    )


def _refresh(
    urn: str, typ: str, old: dict[str, object], new: dict[str, object] | None
) -> ev.EngineEvent:
    meta = ev.StepEventMetadata(
        op=ev.OpType.REFRESH,
        urn=urn,
        type=typ,
        provider="",
        old=_state(urn, typ, old),
        new=_state(urn, typ, new) if new is not None else None,
    )
    return ev.EngineEvent(1, 0, res_outputs_event=ev.ResOutputsEvent(metadata=meta, planning=True))


def test_constructed_refresh_events_name_changed_and_gone_resources() -> None:
    sg = "aws:ec2/securityGroup:SecurityGroup"
    inst = "urn:pulumi:lab::dreamlake::aws:ec2/instance:Instance::worker"
    stream = [
        _refresh(STACK, "pulumi:pulumi:Stack", {"a": 1}, {"a": 2}),
        _refresh(
            URN, sg, {"tags": {"team": "a"}, "ingress": []}, {"tags": {"team": "b"}, "ingress": []}
        ),
        _refresh(inst, "aws:ec2/instance:Instance", {"id": "i-1"}, None),
        _refresh(
            "urn:pulumi:lab::dreamlake::aws:s3/bucket:Bucket::same",
            "aws:s3/bucket:Bucket",
            {"x": 1},
            {"x": 1},
        ),
    ]
    assert refresh_drift(stream) == [  # by URN
        Drifted(inst, "delete"),
        Drifted(URN, "update", ("tags.team",)),
    ]


def _worker_urn(d: Path) -> str:
    project = PulumiProject.of(d)
    cp = BackendFiles.open(
        project.default_state_dir, project.stack_project, project.stack_short
    ).checkpoint()
    assert cp is not None
    return next(r["urn"] for r in cp.resources if r["type"] != "pulumi:pulumi:Stack")


@pytest.mark.slow
def test_drift_through_the_automation_api_is_recorded_read_and_dropped(
    standin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = write_provider(tmp_path, config=LOCAL_OK)
    backend = PulumiBackend()
    assert backend.plan(d).result == "ok" and backend.apply(d).result == "applied"
    root = str(tmp_path)

    quiet = drift("lab", dream_dir=root)
    assert quiet.status == "applied" and quiet.drift is None, quiet.to_json()
    record = d / "pulumi" / DRIFT_FILE
    assert record.is_file() and str(record) in (quiet.files or [])

    urn = _worker_urn(d)
    cloud = tmp_path / "cloud.json"
    cloud.write_text(json.dumps({urn: {"changedOutside": True}}))
    monkeypatch.setenv("PULUMI_STANDIN_CLOUD", str(cloud))
    got: list[ProgressEvent] = []
    with events.recording(got.append, verb="drift", provider="lab"):
        res = drift("lab", dream_dir=root)
    assert res.status == "applied" and "drift" in (res.degraded or []), res.to_json()
    assert res.drift is not None and [x.address for x in res.drift] == [urn]
    assert "changedOutside" in res.drift[0].attributes
    assert res.next_action is not None and res.next_action.command.startswith(
        "dreamlake provider plan -n lab"
    )
    assert [e.address for e in got if e.type == "resource_drift"] == [urn]

    st = status("lab", dream_dir=root)  # reads the record; runs nothing
    assert st.drift == res.drift and "drift" in (st.degraded or [])

    monkeypatch.delenv("PULUMI_STANDIN_CLOUD")
    assert backend.plan(d).result == "ok" and backend.apply(d).result == "applied"
    st = status("lab", dream_dir=root)  # the checkpoint moved: the record is older
    assert st.drift is None and "drift" not in (st.degraded or [])
    assert not record.exists()


@pytest.mark.skipif(
    shutil.which("pulumi") is None,
    reason="needs the pulumi CLI on PATH (not installable here; "
    "pulumi.automation.PulumiCommand.install() where it is)",
)
def test_real_cli_finds_no_drift_on_a_fresh_local_stack(tmp_path: Path) -> None:
    d = write_provider(tmp_path, config=LOCAL_OK)
    backend = PulumiBackend()
    assert backend.plan(d).result == "ok" and backend.apply(d).result == "applied"
    record = check_drift(d)
    assert record.backend == "pulumi" and record.resources == ()
    assert (d / "pulumi" / DRIFT_FILE).is_file()
