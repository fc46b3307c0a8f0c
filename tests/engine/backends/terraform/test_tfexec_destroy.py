"""The destroy argv builders, without the binary."""

from __future__ import annotations

from dreamlake.engine.backends.terraform.tfexec import (
    DESTROY_PLAN_FILE,
    destroy_apply_args,
    destroy_plan_args,
)


def test_destroy_plan_is_a_saved_machine_readable_destroy_plan() -> None:
    args = destroy_plan_args()
    assert args[0] == "plan" and "-destroy" in args
    assert f"-out={DESTROY_PLAN_FILE}" in args
    assert {"-input=false", "-no-color", "-json", "-detailed-exitcode", "-lock-timeout=0s"} <= set(
        args
    )


def test_destroy_applies_exactly_the_saved_plan() -> None:
    args = destroy_apply_args()
    assert args[0] == "apply" and args[-1] == DESTROY_PLAN_FILE
    assert "-auto-approve" not in args  # a saved plan never prompts
    assert destroy_apply_args(plan_file="x.tfplan", lock_timeout="5s")[-2:] == [
        "-lock-timeout=5s",
        "x.tfplan",
    ]


def test_the_destroy_plan_file_is_git_ignored() -> None:
    from dreamlake.engine.world.scaffold import GITIGNORE

    assert DESTROY_PLAN_FILE.endswith(".tfplan") and "*.tfplan" in GITIGNORE
