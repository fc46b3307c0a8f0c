"""The -json UI stream reader, on every stream file in the shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import uijson


def _streams(fixtures: Path) -> list[Path]:
    return sorted(fixtures.rglob("*.jsonl"))


def test_every_stream_fixture_parses(fixtures: Path) -> None:
    files = _streams(fixtures)
    assert len(files) >= 9
    for f in files:
        text = f.read_text()
        msgs = uijson.parse_stream(text)
        assert len(msgs) == len([ln for ln in text.splitlines() if ln.strip()]), f
        s = uijson.summarize(msgs)
        assert s.version, f


def test_apply_complete_stream(fixtures: Path) -> None:
    s = uijson.summarize(
        uijson.parse_stream(
            (fixtures / "generated-locally/apply.create-complete.jsonl").read_text()
        )
    )
    assert s.version == "1.11.4"
    assert s.operation == "apply" and s.changes and s.changes["add"] == 1
    assert s.applied == ["terraform_data.slow"] and not s.errors
    assert s.outputs["label"]["value"] == "one"


def test_progress_lines_are_one_per_resource_event(fixtures: Path) -> None:
    msgs = uijson.parse_stream((fixtures / "ui-json/apply.create-1.v1.3.7.jsonl").read_text())
    lines = [t for t in (uijson.progress_message(m) for m in msgs) if t]
    assert lines == [
        "null_resource.foo: Creating...",
        "null_resource.foo: Creation complete after 0s [id=3573948886993018026]",
        "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.",
    ]


def test_apply_errored_stream(fixtures: Path) -> None:
    s = uijson.summarize(
        uijson.parse_stream(
            (fixtures / "ui-json/apply.apply_errored-diagnostic.v1.3.7.jsonl").read_text()
        )
    )
    assert s.errored == ["null_resource.foo"]
    assert [d["summary"] for d in s.errors] == ["local-exec provisioner error"]
    assert "main.tf:2" in uijson.diagnostic_text(s.errors[0])


def test_killed_apply_stream_has_no_apply_summary(fixtures: Path) -> None:
    s = uijson.summarize(
        uijson.parse_stream(
            (fixtures / "generated-locally/crash-first-apply/apply-killed.jsonl").read_text()
        )
    )
    assert s.operation == "plan"  # only the plan's summary: the apply never finished
    assert s.applied == [] and not s.errors


@pytest.mark.parametrize(
    ("name", "summary"),
    [
        (
            "generated-locally/plan.missing-required-variable.jsonl",
            "No value for required variable",
        ),
        ("generated-locally/plan.invalid-variable-validation.jsonl", "Invalid value for variable"),
        (
            "generated-locally/plan.lock-held-by-other-process.jsonl",
            "Error acquiring the state lock",
        ),
        ("ui-json/plan.config-error-diagnostic.v1.3.7.jsonl", "Unsupported block type"),
    ],
)
def test_error_diagnostics(fixtures: Path, name: str, summary: str) -> None:
    s = uijson.summarize(uijson.parse_stream((fixtures / name).read_text()))
    assert [d["summary"] for d in s.errors] == [summary]


def test_no_change_plans(fixtures: Path) -> None:
    for name in ("generated-locally/plan.no-changes.jsonl", "ui-json/plan.no-changes.v1.3.7.jsonl"):
        s = uijson.summarize(uijson.parse_stream((fixtures / name).read_text()))
        assert (
            s.changes is not None
            and s.changes["add"] == s.changes["change"] == s.changes["remove"] == 0
        )
        assert not s.errors


def test_garbage_lines_are_skipped() -> None:
    assert uijson.parse_stream("not json\n{broken\n[1]\n\n") == []
