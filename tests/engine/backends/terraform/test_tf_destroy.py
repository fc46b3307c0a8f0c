"""Pieces of the terraform destroy that need no binary: when terraform asks for
``init`` again, and the counts read from the plan stream's change summary."""

from __future__ import annotations

from dreamlake.engine.backends.terraform.destroy import _counts, _needs_init
from dreamlake.engine.contract.result import PlanCounts


def test_init_is_run_again_only_when_terraform_asks_for_it() -> None:
    lock = {"summary": "Inconsistent dependency lock file", "detail": "run terraform init"}
    other = {"summary": "Invalid reference", "detail": "A reference to a resource type..."}
    assert _needs_init(1, [lock])
    assert not _needs_init(1, [other])
    assert not _needs_init(2, [])
    assert _needs_init(1, [{"summary": "x", "detail": 'Please run "terraform init".'}])
    assert _needs_init(1, [{"summary": "Required plugins are not installed", "detail": ""}])


def test_counts_from_the_change_summary() -> None:
    assert _counts({"add": 0, "change": 0, "remove": 3}) == PlanCounts(add=0, change=0, destroy=3)
    assert _counts(None) is None
