"""The -json UI stream reader, on every stream fixture (the project's own, and the
upstream corpus when present)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import uijson
from shared_fixtures import cases, own_manifest, terraform_corpora


def _streams(fixtures: Path) -> list[Path]:
    return sorted(fixtures.rglob("*.jsonl"))


@pytest.mark.parametrize("root", terraform_corpora(), ids=lambda p: p.parts[-2])
def test_every_stream_fixture_parses(root: Path) -> None:
    files = _streams(root)
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
    assert s.version == own_manifest()["terraformVersion"]
    assert s.operation == "apply" and s.changes and s.changes["add"] == 2
    assert s.applied == ["terraform_data.note", "terraform_data.slow"] and not s.errors
    assert s.outputs["label"]["value"] == "one"


@pytest.mark.parametrize(
    ("root", "name", "expected"),
    cases(
        own=[("generated-locally/apply.create-complete.jsonl", None)],
        upstream=[
            (
                "ui-json/apply.create-1.v1.3.7.jsonl",
                [
                    "null_resource.foo: Creating...",
                    "null_resource.foo: Creation complete after 0s [id=3573948886993018026]",
                    "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.",
                ],
            )
        ],
    ),
)
def test_progress_lines_are_one_per_resource_event(
    root: Path, name: str, expected: list[str] | None
) -> None:
    msgs = uijson.parse_stream((root / name).read_text())
    lines = [t for t in (uijson.progress_message(m) for m in msgs) if t]
    if expected is not None:
        assert lines == expected
        return
    slow = [ln for ln in lines if ln.startswith("terraform_data.slow: ")]
    assert slow[:2] == ["terraform_data.slow: Plan to create", "terraform_data.slow: Creating..."]
    assert re.fullmatch(
        r"terraform_data\.slow: Creation complete after \d+s \[id=[-0-9a-f]+\]", slow[-1]
    )
    assert lines[-1] == "Apply complete! Resources: 2 added, 0 changed, 0 destroyed."


@pytest.mark.parametrize(
    ("root", "name", "address"),
    cases(
        own=[("ui-json/apply.apply_errored-diagnostic.jsonl", "terraform_data.failing")],
        upstream=[("ui-json/apply.apply_errored-diagnostic.v1.3.7.jsonl", "null_resource.foo")],
    ),
)
def test_apply_errored_stream(root: Path, name: str, address: str) -> None:
    s = uijson.summarize(uijson.parse_stream((root / name).read_text()))
    assert s.errored == [address]
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


_DIAGNOSTICS = [
    ("generated-locally/plan.missing-required-variable.jsonl", "No value for required variable"),
    ("generated-locally/plan.invalid-variable-validation.jsonl", "Invalid value for variable"),
    ("generated-locally/plan.lock-held-by-other-process.jsonl", "Error acquiring the state lock"),
]


@pytest.mark.parametrize(
    ("root", "name", "summary"),
    cases(
        own=[
            *_DIAGNOSTICS,
            ("ui-json/plan.config-error-diagnostic.jsonl", "Unsupported block type"),
        ],
        upstream=[
            *_DIAGNOSTICS,
            ("ui-json/plan.config-error-diagnostic.v1.3.7.jsonl", "Unsupported block type"),
        ],
    ),
)
def test_error_diagnostics(root: Path, name: str, summary: str) -> None:
    s = uijson.summarize(uijson.parse_stream((root / name).read_text()))
    assert [d["summary"] for d in s.errors] == [summary]


@pytest.mark.parametrize(
    ("root", "name"),
    cases(
        own=[("generated-locally/plan.no-changes.jsonl",)],
        upstream=[
            ("generated-locally/plan.no-changes.jsonl",),
            ("ui-json/plan.no-changes.v1.3.7.jsonl",),
        ],
    ),
)
def test_no_change_plans(root: Path, name: str) -> None:
    s = uijson.summarize(uijson.parse_stream((root / name).read_text()))
    assert s.changes is not None
    assert s.changes["add"] == s.changes["change"] == s.changes["remove"] == 0
    assert not s.errors


def test_garbage_lines_are_skipped() -> None:
    assert uijson.parse_stream("not json\n{broken\n[1]\n\n") == []
