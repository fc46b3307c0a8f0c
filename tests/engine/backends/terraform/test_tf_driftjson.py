"""What drifted, read from terraform's output: the ``plan -refresh-only -json`` stream
and ``show -json`` of that plan, as terraform 1.0.3 and 1.11.4 printed them (recorded
from real runs against the AWS API double on 127.0.0.1: a security group whose tags
and ingress were changed through the API)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.driftjson import (
    Drifted,
    changed_attributes,
    merge,
    plan_drift,
    stream_drift,
)
from dreamlake.engine.backends.terraform.tfexec import plan_args
from dreamlake.engine.backends.terraform.uijson import parse_stream

RECORDED = Path(__file__).parent / "drift_streams"
SG = "aws_security_group.web"
CHANGED = ("ingress", "tags.team", "tags.x", "tags_all.team", "tags_all.x")


@pytest.mark.parametrize("version", ["1.0.3", "1.11.4"])
def test_recorded_streams_name_the_resource_and_show_its_attributes(version: str) -> None:
    stream = parse_stream((RECORDED / f"refresh-only-{version}.jsonl").read_text())
    streamed = stream_drift(stream)
    assert streamed == [Drifted(SG, "update")]
    shown = plan_drift(json.loads((RECORDED / f"show-{version}.json").read_text()))
    assert shown == [Drifted(SG, "update", CHANGED)]
    assert merge(streamed, shown) == [Drifted(SG, "update", CHANGED)]


def test_a_resource_gone_is_a_delete_with_no_attributes() -> None:
    plan = {
        "resource_drift": [
            {
                "address": "aws_instance.web",
                "mode": "managed",
                "change": {"actions": ["delete"], "before": {"id": "i-1"}, "after": None},
            },
            {"address": "data.aws_ami.x", "mode": "data", "change": {"actions": ["update"]}},
            {"address": "aws_vpc.main", "mode": "managed", "change": {"actions": ["no-op"]}},
        ]
    }
    assert plan_drift(plan) == [Drifted("aws_instance.web", "delete", ())]


def test_data_sources_and_other_messages_are_not_drift() -> None:
    def msg(addr: str, kind: str = "resource_drift") -> dict[str, object]:
        return {"type": kind, "change": {"resource": {"addr": addr}, "action": "update"}}

    assert stream_drift([msg("data.aws_ami.x"), msg("a.b", "planned_change"), msg("a.c")]) == [
        Drifted("a.c", "update")
    ]


def test_changed_attributes_name_map_keys_and_never_values() -> None:
    before = {"tags": {"a": "1", "b": "2"}, "ingress": [], "name": "x", "meta": {"k": [1]}}
    after = {"tags": {"a": "1", "b": "3", "c": "4"}, "ingress": [{"p": 22}], "name": "x"}
    assert changed_attributes(before, after) == ("ingress", "meta", "tags.b", "tags.c")
    assert changed_attributes(None, after) == ()


def test_merge_keeps_stream_resources_without_show_detail_in_address_order() -> None:
    got = merge(
        [Drifted("b.x", "update"), Drifted("a.y", "delete")], [Drifted("b.x", "update", ("t",))]
    )
    assert got == [Drifted("a.y", "delete"), Drifted("b.x", "update", ("t",))]


def test_refresh_only_argv_saves_its_own_plan_file() -> None:
    args = plan_args(out="drift.tfplan", refresh_only=True)
    assert "-refresh-only" in args and "-detailed-exitcode" in args and "-json" in args
    assert "-out=drift.tfplan" in args and "-out=tfplan" not in args


@pytest.mark.parametrize("version", ["1.0.3", "1.11.4"])
def test_the_check_streams_resource_drift_events(version: str) -> None:
    """``drift --events``: each ``resource_drift`` line of the run becomes one event."""
    from dreamlake.engine.backends.terraform.runs import feed
    from dreamlake.engine.contract import events
    from dreamlake.engine.contract.events import ProgressEvent

    got: list[ProgressEvent] = []
    with events.recording(got.append, verb="drift", provider="lab"):
        on_line = feed(None)
        assert on_line is not None
        for line in (RECORDED / f"refresh-only-{version}.jsonl").read_text().splitlines():
            on_line(line)
    drifted = [(e.address, e.action) for e in got if e.type == "resource_drift"]
    assert drifted == [(SG, "update")]
