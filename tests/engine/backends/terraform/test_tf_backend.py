"""The backend against each real terraform binary on small configurations of our own
(outputs only, so no provider plugin is needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import BACKEND
from dreamlake.engine.backends.terraform.runner import TerraformFailed
from dreamlake.engine.contract.errors import BinaryMissing

MAIN = """
variable "name" {
  type = string
  validation {
    condition     = length(var.name) > 3
    error_message = "The name must be longer than 3 characters."
  }
}

variable "region" {
  type = string
}

output "greeting" {
  value = "hello ${var.name} in ${var.region}"
}
"""


def _provider(tmp_path: Path, tfvars: str) -> Path:
    tf = tmp_path / "p" / "terraform"
    tf.mkdir(parents=True)
    (tf / "main.tf").write_text(MAIN)
    (tf / "terraform.tfvars").write_text(tfvars)
    return tf.parent


@pytest.mark.slow
def test_plan_questions_then_plan_apply(terraform_binary: str, tmp_path: Path) -> None:
    pdir = _provider(tmp_path, 'name = "ab"\n# region = ""\n')
    out = BACKEND.plan(pdir)
    assert out.result == "needs_input"
    assert [(b.key, b.reason) for b in out.blocking] == [("region", "unset")]
    assert out.blocking[0].line == 2

    (pdir / "terraform/terraform.tfvars").write_text('name = "ab"\nregion = "x"\n')
    out = BACKEND.plan(pdir)
    (b,) = out.blocking
    assert (b.key, b.reason, b.line) == ("name", "invalid", 1)
    assert b.message == "The name must be longer than 3 characters."

    (pdir / "terraform/terraform.tfvars").write_text('name = "abcd"\nregion = "x"\n')
    events: list[str] = []
    out = BACKEND.plan(pdir, progress=events.append)
    assert (
        out.result == "ok"
        and out.plan is not None
        and (out.plan.add, out.plan.change, out.plan.destroy) == (0, 0, 0)
    )
    assert str(pdir / "terraform/tfplan") in out.files
    meta = json.loads((pdir / "terraform/tfplan.meta.json").read_text())
    assert meta["changes"] is True and meta["state"]["fingerprint"] == "absent"
    s = BACKEND.observe_state(pdir)
    assert s.plan_fresh and not s.present

    res = BACKEND.apply(pdir, progress=events.append)
    assert res.result == "applied" and str(pdir / "terraform/terraform.tfstate") in res.files
    assert any("Apply complete" in e for e in events)
    s = BACKEND.observe_state(pdir)
    assert s.present and s.outputs == {"greeting": "hello abcd in x"} and not s.plan_fresh
    assert not (pdir / "terraform/tfplan").exists()
    assert BACKEND.outputs(pdir) == {"greeting": "hello abcd in x"}

    again = BACKEND.apply(pdir)
    assert again.result == "no_plan" and "no saved plan" in again.reason


@pytest.mark.slow
def test_stale_plan_is_not_applied(terraform_binary: str, tmp_path: Path) -> None:
    pdir = _provider(tmp_path, 'name = "abcd"\nregion = "x"\n')
    assert BACKEND.plan(pdir).result == "ok"
    (pdir / "terraform/terraform.tfvars").write_text('name = "abcde"\nregion = "x"\n')
    assert not BACKEND.observe_state(pdir).plan_fresh
    res = BACKEND.apply(pdir)
    assert res.result == "no_plan" and "terraform.tfvars" in res.reason
    assert not (pdir / "terraform/terraform.tfstate").exists()


@pytest.mark.slow
def test_syntax_error_is_a_typed_failure(terraform_binary: str, tmp_path: Path) -> None:
    pdir = _provider(tmp_path, 'name = "abcd"\nregion = "x"\n')
    (pdir / "terraform/broken.tf").write_text('output "x" {\n  value = \n}\n')
    with pytest.raises(TerraformFailed) as e:
        BACKEND.plan(pdir)
    assert e.value.kind == "terraform" and e.value.returncode == 1 and e.value.argv


def test_missing_binary(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TERRAFORM_BINARY", str(tmp_path / "no-terraform"))
    pdir = _provider(tmp_path, "")
    with pytest.raises(BinaryMissing):
        BACKEND.plan(pdir)


@pytest.mark.slow
def test_the_apply_step_counts_what_the_saved_plan_touches(
    terraform_binary: str, tmp_path: Path
) -> None:
    """The ``apply`` step's ``total`` is the fresh saved plan's add + change + destroy,
    taken from the state observed just before the apply."""
    from dreamlake.engine.backends.terraform.binaries import at_least, version_of
    from dreamlake.engine.contract import events

    if not at_least(version_of(terraform_binary) or "0", "1.4.0"):
        pytest.skip("needs terraform >= 1.4 (the builtin terraform_data resource)")
    pdir = _provider(tmp_path, 'name = "abcd"\nregion = "x"\n')
    (pdir / "terraform/data.tf").write_text(
        'resource "terraform_data" "one" {}\nresource "terraform_data" "two" {}\n'
    )
    planned = BACKEND.plan(pdir)
    assert planned.plan is not None and planned.plan.add == 2
    seen: list[events.ProgressEvent] = []
    with events.recording(seen.append, verb="apply", provider="p"):
        assert BACKEND.apply(pdir).result == "applied"
    assert [(e.step, e.total) for e in seen if e.type == "step"] == [("apply", 2)]
