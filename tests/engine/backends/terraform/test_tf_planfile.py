"""The saved-plan record and its freshness rules (no terraform needed: the plan
file's bytes are opaque here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import planfile
from dreamlake.engine.contract.result import PlanCounts


def _dir(tmp_path: Path) -> Path:
    tf = tmp_path / "terraform"
    (tf / ".terraform").mkdir(parents=True)
    (tf / "main.tf").write_text('output "a" { value = 1 }\n')
    (tf / "terraform.tfvars").write_text('x = "1"\n')
    (tf / ".terraform.lock.hcl").write_text("# lock\n")
    (tf / ".terraform" / "ignored.tf").write_text("# not an input\n")
    (tf / "tfplan").write_bytes(b"PK fake plan")
    planfile.write_record(
        tf,
        planfile.make_record(
            tf, PlanCounts(add=1, change=0, destroy=0), changes=True, terraform_version="1.11.4"
        ),
    )
    return tf


def test_inputs_skip_terraform_working_dir(tmp_path: Path) -> None:
    tf = _dir(tmp_path)
    assert sorted(planfile.input_hashes(tf)) == [
        ".terraform.lock.hcl",
        "main.tf",
        "terraform.tfvars",
    ]


def test_fresh_then_stale_on_tfvars_edit(tmp_path: Path) -> None:
    tf = _dir(tmp_path)
    f = planfile.freshness(tf)
    assert f.fresh and f.record is not None and f.record.plan.add == 1
    (tf / "terraform.tfvars").write_text('x = "2"\n')
    f = planfile.freshness(tf)
    assert not f.fresh and "terraform.tfvars" in f.reason


def test_new_input_file_makes_it_stale(tmp_path: Path) -> None:
    tf = _dir(tmp_path)
    (tf / "extra.tf").write_text("# new\n")
    assert "extra.tf" in planfile.freshness(tf).reason


def test_state_change_makes_it_stale_but_an_empty_state_does_not(tmp_path: Path) -> None:
    tf = _dir(tmp_path)
    (tf / "terraform.tfstate").write_text("")  # what a killed first apply leaves
    assert planfile.freshness(tf).fresh
    (tf / "terraform.tfstate").write_text(
        '{"version":4,"serial":1,"lineage":"l","outputs":{},"resources":[]}'
    )
    f = planfile.freshness(tf)
    assert not f.fresh and "state changed" in f.reason


def test_missing_or_replaced_plan(tmp_path: Path) -> None:
    tf = _dir(tmp_path)
    (tf / "tfplan").write_bytes(b"another plan")
    assert "replaced" in planfile.freshness(tf).reason
    (tf / "tfplan").unlink()
    assert planfile.freshness(tf).reason == "there is no saved plan"
    (tf / "tfplan").write_bytes(b"x")
    (tf / planfile.META_FILE).write_text("{not json")
    assert "tfplan.meta.json" in planfile.freshness(tf).reason


def test_discard(tmp_path: Path) -> None:
    tf = _dir(tmp_path)
    planfile.discard(tf)
    assert not (tf / "tfplan").exists() and not (tf / planfile.META_FILE).exists()


def test_the_record_is_written_without_an_fsync_and_an_emptied_one_is_no_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``plan`` pays no ``fsync`` for its record (terraform writes the plan file
    without one); a record a crash emptied reads as none: not fresh, plan again."""
    from dreamlake.engine.settings import fsutil

    synced: list[int] = []
    monkeypatch.setattr(fsutil.os, "fsync", synced.append)
    tf = _dir(tmp_path)
    assert synced == [] and planfile.freshness(tf).fresh
    (tf / planfile.META_FILE).write_text("")
    f = planfile.freshness(tf)
    assert not f.fresh and planfile.META_FILE in f.reason
