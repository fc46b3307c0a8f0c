"""Progress events: the schema snapshot, the recorder, and terraform's -json stream
mapped onto events (messages as terraform 1.11 writes them)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from dreamlake.engine.backends.terraform.uievents import event_fields
from dreamlake.engine.contract import events
from dreamlake.engine.contract.events import EVENT_TYPES, ProgressEvent, json_schema

SNAPSHOT = Path(__file__).parent / "snapshots" / "event.schema.json"


def test_event_schema_snapshot() -> None:
    """An event change must be deliberate: regenerate with DREAMLAKE_UPDATE_SNAPSHOTS=1."""
    current = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("DREAMLAKE_UPDATE_SNAPSHOTS") == "1" or not SNAPSHOT.exists():
        SNAPSHOT.write_text(current)
    assert current == SNAPSHOT.read_text(), "the event schema changed; see the snapshot diff"
    schema = json.loads(current)
    assert {"type", "seq", "elapsed", "verb", "provider"} <= set(schema["required"])
    assert set(schema["properties"]["type"]["enum"]) == set(EVENT_TYPES)


def test_no_sink_no_events_and_no_cost() -> None:
    assert not events.active()
    events.emit("step", step="init")  # nothing installed: nothing happens
    events.step("plan")


def test_recording_numbers_and_times_events_in_order() -> None:
    got: list[ProgressEvent] = []
    with events.recording(got.append, verb="plan", provider="p") as rec:
        assert events.active()
        events.step("init", "terraform init")
        events.emit("resource_start", address="a.b", action="create")
        rec.emit("end", status="ready")
    assert not events.active()
    assert [e.type for e in got] == ["start", "step", "resource_start", "end"]
    assert [e.seq for e in got] == [1, 2, 3, 4]
    assert all(e.verb == "plan" and e.provider == "p" for e in got)
    assert [e.elapsed for e in got] == sorted(e.elapsed for e in got)
    wire = json.loads(got[2].to_json())
    assert wire == {
        "type": "resource_start",
        "seq": 3,
        "elapsed": wire["elapsed"],
        "verb": "plan",
        "provider": "p",
        "address": "a.b",
        "action": "create",
    }
    assert ProgressEvent.model_validate(wire) == got[2]


def test_a_failing_sink_never_fails_the_verb() -> None:
    def broken(_e: ProgressEvent) -> None:
        raise BrokenPipeError

    with events.recording(broken, verb="apply", provider="p"):
        events.step("apply")  # no exception


def test_sinks_are_per_thread_context() -> None:
    seen: dict[str, list[str]] = {"a": [], "b": []}

    def run(key: str) -> None:
        with events.recording(lambda e: seen[key].append(e.type), verb="plan", provider=key):
            events.step(key)

    threads = [threading.Thread(target=run, args=(k,)) for k in seen]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": ["start", "step"], "b": ["start", "step"]}


def test_terraform_stream_to_events() -> None:
    res = {"addr": "terraform_data.slow[0]", "resource_type": "terraform_data"}
    assert event_fields(
        {
            "type": "planned_change",
            "@message": "terraform_data.slow[0]: Plan to create",
            "change": {"resource": res, "action": "create"},
        }
    ) == (
        "resource_planned",
        {
            "address": "terraform_data.slow[0]",
            "action": "create",
            "message": "terraform_data.slow[0]: Plan to create",
        },
    )
    kind, fields = event_fields(
        {
            "type": "apply_complete",
            "@message": "terraform_data.slow[0]: Creation complete after 2s",
            "hook": {"resource": res, "action": "create", "elapsed_seconds": 2},
        }
    ) or ("", {})
    assert kind == "resource_done"
    assert fields["address"] == "terraform_data.slow[0]" and fields["resource_elapsed"] == 2.0
    assert event_fields({"type": "apply_start", "hook": {"resource": res, "action": "create"}})
    kind, fields = event_fields(
        {
            "type": "change_summary",
            "@message": "Plan: 2 to add, 0 to change, 0 to destroy.",
            "changes": {"add": 2, "change": 0, "remove": 0, "operation": "plan"},
        }
    ) or ("", {})
    assert (kind, fields["changes"], fields["step"]) == (
        "summary",
        {"add": 2, "change": 0, "remove": 0},
        "plan",
    )
    assert event_fields({"type": "diagnostic", "@level": "error", "@message": "Error: x"}) == (
        "diagnostic",
        {"message": "Error: x"},
    )
    assert event_fields({"type": "version", "terraform": "1.11.4"}) is None
    assert event_fields({"type": "outputs", "outputs": {}}) is None
    assert event_fields({"type": "diagnostic", "@level": "warn", "@message": "w"}) is None
