"""Counts from `terraform show -json` plan files in the shared fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.planjson import is_applyable, is_errored, plan_counts


@pytest.mark.parametrize(
    ("name", "counts", "applyable"),
    [
        ("plan-json/equivalence.data_read.read+create.plan.json", (3, 0, 0), True),
        ("plan-json/equivalence.variables_and_outputs.outputs-only.plan.json", (0, 0, 0), True),
        ("plan-json/show-json.basic-delete.update+delete.json", (0, 1, 1), True),
        ("plan-json/show-json.basic-update.noop-not-applyable.json", (0, 0, 0), False),
        ("plan-json/show-json.plan-error.errored.json", (0, 0, 0), False),
        ("plan-json/show-json.requires-replace.delete-create.json", (1, 0, 1), True),
        ("generated-locally/show-json.replace.full.json", (1, 0, 1), True),
    ],
)
def test_counts(fixtures: Path, name: str, counts: tuple[int, int, int], applyable: bool) -> None:
    plan = json.loads((fixtures / name).read_text())
    c = plan_counts(plan)
    assert (c.add, c.change, c.destroy) == counts
    assert is_applyable(plan, c) is applyable


def test_every_plan_fixture_is_read(fixtures: Path) -> None:
    for f in sorted((fixtures / "plan-json").glob("*.json")):
        plan = json.loads(f.read_text())
        plan_counts(plan)
        assert is_errored(plan) == ("errored" in f.name)


def test_applyable_falls_back_to_counts_without_the_field() -> None:
    plan = {"resource_changes": [], "output_changes": {"x": {"actions": ["create"]}}}
    assert is_applyable(plan)
    assert not is_applyable({"output_changes": {"x": {"actions": ["no-op"]}}})
