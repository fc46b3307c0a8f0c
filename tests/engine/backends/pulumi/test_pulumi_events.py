"""Progress events from the Automation API's engine events: the SDK's own event
stream turns what the CLI reports into ``EngineEvent`` objects, and the backend
reports them resource by resource. The CLI is the STAND-IN for the pulumi binary
(``pulumi_cli_standin.py``, see test_pulumi_automation), which cannot be installed
here: it streams engine events to the SDK as a current CLI does."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.engine.backends.pulumi import PulumiBackend
from dreamlake.engine.backends.pulumi.uievents import event_fields
from dreamlake.engine.contract import events
from dreamlake.engine.contract.events import ProgressEvent
from pulumi_helpers import LOCAL_OK, write_provider
from test_pulumi_automation import standin as standin  # the fixture, shared

URN = "urn:pulumi:lab::dreamlake-local::local:index:Worker::box"


@pytest.mark.slow
def test_preview_and_up_report_resources(standin: Path, tmp_path: Path) -> None:
    d = write_provider(tmp_path, config=LOCAL_OK)
    backend = PulumiBackend()
    got: list[ProgressEvent] = []
    with events.recording(got.append, verb="plan", provider="lab"):
        assert backend.plan(d).result == "ok"
    kinds = [(e.type, e.step or e.address) for e in got]
    assert kinds[:2] == [("start", None), ("step", "preview")]
    planned = [e.address for e in got if e.type == "resource_planned"]
    assert planned and all(a and a.startswith("urn:pulumi:") for a in planned)

    got.clear()
    with events.recording(got.append, verb="apply", provider="lab"):
        assert backend.apply(d).result == "applied"
    worker = [e for e in got if e.address and e.address.endswith("LocalWorker::dreamlake")]
    assert [e.type for e in worker] == ["resource_start", "resource_done"]
    assert [e.seq for e in got] == list(range(1, len(got) + 1))


@pytest.mark.slow
def test_without_a_recorder_no_handler_is_installed(standin: Path, tmp_path: Path) -> None:
    d = write_provider(tmp_path, config=LOCAL_OK)
    assert events.current() is None
    assert PulumiBackend().plan(d).result == "ok"


def test_mapping_skips_what_changes_nothing() -> None:
    class Meta:
        op = "same"
        urn = URN

    class Ev:
        resource_pre_event = type("Pre", (), {"metadata": Meta})()

    assert event_fields(Ev(), preview=True) is None


def test_summary_counts_by_the_same_kinds_as_terraform() -> None:
    """``summary.changes`` is counted by kind (add, change, remove, import) on both
    backends, and names the operation it ends (a destroy's is not ``up``)."""
    from dreamlake.engine.backends.terraform.uievents import event_fields as tf_fields

    class Summary:
        resource_changes = {"create": 1, "replace": 1, "update": 2, "same": 5, "delete": 1}

    class Ev:
        summary_event = Summary()

    kind, fields = event_fields(Ev(), preview=True) or ("", {})
    assert (kind, fields["step"]) == ("summary", "preview")
    assert fields["changes"] == {"add": 2, "change": 2, "remove": 2, "import": 0}
    assert fields["message"] == "preview: 2 to add, 2 to change, 2 to remove"  # what -v shows
    tf = tf_fields(
        {
            "type": "change_summary",
            "@message": "Plan: 1 to add, 0 to change, 0 to destroy.",
            "changes": {"add": 1, "change": 0, "import": 0, "remove": 0, "operation": "plan"},
        }
    )
    assert tf is not None and set(tf[1]["changes"]) == set(fields["changes"])
    destroyed = event_fields(Ev(), preview=False, step="destroy")
    assert destroyed is not None and destroyed[1]["step"] == "destroy"
