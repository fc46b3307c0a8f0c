"""Variable diagnostics → blocking, on the real jsonl fixtures and the local template."""

from __future__ import annotations

from pathlib import Path

from dreamlake.engine.backends.terraform.diagnostics import (
    blocking_from_diagnostics,
    tfvars_line,
    validation_message,
    variable_name,
)
from dreamlake.engine.backends.terraform.uijson import parse_stream, summarize
from dreamlake.engine.world.vendors import Decision, Template


def _errors(fixtures: Path, name: str) -> list[dict]:
    return summarize(parse_stream((fixtures / "generated-locally" / name).read_text())).errors


TEMPLATE = Template(
    vendor="t",
    version=1,
    kind="test",
    backends=("terraform",),
    files=(),
    decisions=(
        Decision(
            key="display_name", var="name", file="terraform/terraform.tfvars", why="Pick a name."
        ),
    ),
)


def _provider(tmp_path: Path) -> Path:
    tf = tmp_path / "p" / "terraform"
    tf.mkdir(parents=True)
    (tf / "terraform.tfvars").write_text('# Decisions.\n\n# name = ""\n')
    return tf.parent


def test_missing_variable_maps_to_the_decision(tmp_path: Path, fixtures: Path) -> None:
    pdir = _provider(tmp_path)
    (b,) = (
        blocking_from_diagnostics(
            _errors(fixtures, "plan.missing-required-variable.jsonl"),
            provider_dir=pdir,
            template=TEMPLATE,
        )
        or []
    )
    assert b.key == "display_name" and b.reason == "unset" and b.why == "Pick a name."
    assert b.file == str(pdir / "terraform" / "terraform.tfvars") and b.line == 3
    assert b.message is None


def test_invalid_variable_carries_the_validation_message(tmp_path: Path, fixtures: Path) -> None:
    pdir = _provider(tmp_path)
    (pdir / "terraform" / "terraform.tfvars").write_text('name = "ab"\n')
    (b,) = (
        blocking_from_diagnostics(
            _errors(fixtures, "plan.invalid-variable-validation.jsonl"),
            provider_dir=pdir,
            template=TEMPLATE,
        )
        or []
    )
    assert b.key == "display_name" and b.reason == "invalid" and b.line == 1
    assert b.message == "The name must be longer than 3 characters."


def test_unknown_variable_keeps_its_name(tmp_path: Path, fixtures: Path) -> None:
    pdir = _provider(tmp_path)
    (b,) = (
        blocking_from_diagnostics(
            _errors(fixtures, "plan.missing-required-variable.jsonl"),
            provider_dir=pdir,
            template=None,
        )
        or []
    )
    assert b.key == "name" and b.file == str(pdir / "terraform" / "terraform.tfvars")


def test_other_errors_are_not_questions(tmp_path: Path, fixtures: Path) -> None:
    pdir = _provider(tmp_path)
    assert (
        blocking_from_diagnostics(
            _errors(fixtures, "plan.lock-held-by-other-process.jsonl"),
            provider_dir=pdir,
            template=TEMPLATE,
        )
        is None
    )
    mixed = _errors(fixtures, "plan.missing-required-variable.jsonl") + _errors(
        fixtures, "plan.lock-held-by-other-process.jsonl"
    )
    assert blocking_from_diagnostics(mixed, provider_dir=pdir, template=TEMPLATE) is None
    assert blocking_from_diagnostics([], provider_dir=pdir, template=TEMPLATE) is None


def test_variable_name_sources(tmp_path: Path) -> None:
    assert variable_name({"snippet": {"values": [{"traversal": "var.region"}]}}) == "region"
    assert variable_name({"snippet": {"code": 'variable "zone" {'}}) == "zone"
    assert variable_name({"detail": "Unsuitable value for var.size set using -var"}) == "size"
    (tmp_path / "x.tfvars").write_text('a = 1\nqueues = "x"\n')
    assert (
        variable_name({"range": {"filename": "x.tfvars", "start": {"line": 2}}}, tmp_path)
        == "queues"
    )


def test_tfvars_line_prefers_the_assignment(tmp_path: Path) -> None:
    p = tmp_path / "t.tfvars"
    p.write_text('# region = "a"\nregion = "b"\n')
    assert tfvars_line(p, "region") == 2
    assert tfvars_line(p, "other") is None
    assert (
        validation_message(
            {"detail": "Bad.\n\nThis was checked by the validation rule at main.tf:3,3-13."}
        )
        == "Bad."
    )
