"""Counts from `terraform show -json` plan files (the project's own fixtures, and the
upstream corpus when present)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.planjson import (
    is_applyable,
    is_errored,
    plan_counts,
    stream_plan,
)
from dreamlake.engine.backends.terraform.uijson import parse_stream
from shared_fixtures import cases, own_manifest, terraform_corpora


@pytest.mark.parametrize(
    ("root", "name", "counts", "applyable"),
    cases(
        own=[
            ("plan-json/create-2.json", (2, 0, 0), True),
            ("plan-json/outputs-only.plan.json", (0, 0, 0), True),
            ("plan-json/update.json", (0, 1, 0), True),
            ("plan-json/update+delete.json", (0, 1, 1), True),
            ("plan-json/noop-not-applyable.json", (0, 0, 0), False),
            ("generated-locally/show-json.replace.full.json", (1, 0, 1), True),
            *(
                [("plan-json/ec2.create.local-aws-api.json", (2, 0, 0), True)]
                if own_manifest()["ec2"]
                else []
            ),
        ],
        upstream=[
            ("plan-json/equivalence.data_read.read+create.plan.json", (3, 0, 0), True),
            ("plan-json/equivalence.variables_and_outputs.outputs-only.plan.json", (0, 0, 0), True),
            ("plan-json/show-json.basic-delete.update+delete.json", (0, 1, 1), True),
            ("plan-json/show-json.basic-update.noop-not-applyable.json", (0, 0, 0), False),
            ("plan-json/show-json.plan-error.errored.json", (0, 0, 0), False),
            ("plan-json/show-json.requires-replace.delete-create.json", (1, 0, 1), True),
        ],
    ),
)
def test_counts(root: Path, name: str, counts: tuple[int, int, int], applyable: bool) -> None:
    plan = json.loads((root / name).read_text())
    c = plan_counts(plan)
    assert (c.add, c.change, c.destroy) == counts
    assert is_applyable(plan, c) is applyable


@pytest.mark.parametrize("root", terraform_corpora(), ids=lambda p: p.parts[-2])
def test_every_plan_fixture_is_read(root: Path) -> None:
    for f in sorted((root / "plan-json").glob("*.json")):
        plan = json.loads(f.read_text())
        plan_counts(plan)
        assert is_errored(plan) == ("errored" in f.name)


def test_applyable_falls_back_to_counts_without_the_field() -> None:
    plan = {"resource_changes": [], "output_changes": {"x": {"actions": ["create"]}}}
    assert is_applyable(plan)
    assert not is_applyable({"output_changes": {"x": {"actions": ["no-op"]}}})


@pytest.mark.parametrize(
    ("name", "counts", "creates", "outputs"),
    [
        ("ui-json/plan.create.jsonl", (2, 0, 0), ("terraform_data.note", "terraform_data.slow"), 1),
        ("generated-locally/plan.no-changes.jsonl", (0, 0, 0), (), 0),
    ],
)
def test_the_plan_stream_counts_as_show_does(
    fixtures: Path, name: str, counts: tuple[int, int, int], creates: tuple[str, ...], outputs: int
) -> None:
    got = stream_plan(parse_stream((fixtures / name).read_text()))
    assert (got.counts.add, got.counts.change, got.counts.destroy) == counts
    assert got.creates == creates and got.output_changes == outputs


def test_the_plan_stream_without_a_summary_counts_each_planned_change() -> None:
    def change(addr: str, action: str) -> dict[str, object]:
        resource = {"addr": addr, "resource": addr.split("module.m.")[-1]}
        return {"type": "planned_change", "change": {"resource": resource, "action": action}}

    got = stream_plan(
        [
            change("module.m.aws_instance.b", "replace"),
            change("aws_instance.a", "create"),
            change("data.aws_ami.x", "read"),
            change("aws_eip.c", "update"),
            change("aws_eip.d", "delete"),
        ]
    )
    assert (got.counts.add, got.counts.change, got.counts.destroy) == (2, 1, 2)
    assert got.creates == ("aws_instance.a", "module.m.aws_instance.b")  # by address
