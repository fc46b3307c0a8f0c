"""Progress events from the Automation API's engine events: the SDK's own event-log
reader turns the lines the CLI writes into ``EngineEvent`` objects, and the backend
reports them resource by resource. The CLI is ``StreamingCLIDouble``, a TEST DOUBLE
for the pulumi binary (which cannot be installed here) that writes resource steps
into the event log the SDK asked for, as the real CLI does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dreamlake.engine import events
from dreamlake.engine.backends.pulumi.uievents import event_fields
from dreamlake.engine.events import ProgressEvent
from pulumi_helpers import LOCAL_OK
from test_pulumi_automation import PulumiCLIDouble, _backend
from test_pulumi_automation import cli_env as cli_env  # the fixture, shared

URN = "urn:pulumi:lab::dreamlake-local::local:index:Worker::box"


class StreamingCLIDouble(PulumiCLIDouble):
    """TEST DOUBLE for the pulumi CLI: also writes resource steps to the event log."""

    def run(self, args, cwd, additional_env, on_output=None, on_error=None):  # type: ignore[override]
        args = list(args)
        if "--event-log" in args:
            log = Path(args[args.index("--event-log") + 1])
            meta = {"op": "create", "urn": URN, "type": "local:index:Worker", "provider": ""}
            same = {**meta, "op": "same", "urn": URN + "-same"}
            lines = [
                {"sequence": 0, "timestamp": 1, "resourcePreEvent": {"metadata": same}},
                {"sequence": 0, "timestamp": 1, "resourcePreEvent": {"metadata": meta}},
                {"sequence": 0, "timestamp": 1, "resOutputsEvent": {"metadata": meta}},
            ]
            with log.open("a") as fh:
                fh.write("".join(json.dumps(e) + "\n" for e in lines))
        return super().run(args, cwd, additional_env, on_output, on_error)


def test_preview_and_up_report_resources(provider, cli_env: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    d = provider(config=LOCAL_OK)
    backend = _backend(StreamingCLIDouble({"create": 1}), cli_env)
    got: list[ProgressEvent] = []
    with events.recording(got.append, verb="plan", provider="lab"):
        assert backend.plan(d).result == "ok"
    kinds = [(e.type, e.step or e.address) for e in got]
    assert kinds[:2] == [("start", None), ("step", "preview")]
    assert ("resource_planned", URN) in kinds
    assert not any(e.address and e.address.endswith("-same") for e in got)
    assert got[-1].type == "summary" and got[-1].changes == {"create": 1}

    got.clear()
    with events.recording(got.append, verb="apply", provider="lab"):
        assert backend.apply(d).result == "applied"
    mine = [e.type for e in got if e.address == URN]
    assert mine == ["resource_start", "resource_done"]
    assert [e.seq for e in got] == list(range(1, len(got) + 1))


def test_without_a_recorder_no_handler_is_installed(provider, cli_env: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    d = provider(config=LOCAL_OK)
    assert _backend(StreamingCLIDouble({"create": 1}), cli_env).plan(d).result == "ok"


def test_mapping_skips_what_changes_nothing() -> None:
    class Meta:
        op = "same"
        urn = URN

    class Ev:
        resource_pre_event = type("Pre", (), {"metadata": Meta})()

    assert event_fields(Ev(), preview=True) is None
