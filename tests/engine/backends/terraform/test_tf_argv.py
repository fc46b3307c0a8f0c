"""The argv builders are pure: no binary needed."""

from dreamlake.engine.backends.terraform.tfexec import (
    apply_args,
    init_args,
    plan_args,
    show_args,
    state_pull_args,
    validate_args,
    version_args,
)


def test_init_is_non_interactive() -> None:
    assert init_args() == ["init", "-input=false", "-no-color"]
    assert init_args(backend=False, upgrade=True, plugin_dirs=["/m"]) == [
        "init",
        "-input=false",
        "-no-color",
        "-backend=false",
        "-upgrade",
        "-plugin-dir=/m",
    ]


def test_validate_reads_json() -> None:
    assert validate_args() == ["validate", "-json", "-no-color"]


def test_plan_saves_a_plan_and_reports_machine_readably() -> None:
    args = plan_args()
    assert args[0] == "plan"
    for flag in (
        "-input=false",
        "-no-color",
        "-json",
        "-detailed-exitcode",
        "-out=tfplan",
        "-lock-timeout=0s",
    ):
        assert flag in args
    assert plan_args(out="x", var_files=["a.tfvars"], refresh=False, destroy=True)[-4:] == [
        "-out=x",
        "-refresh=false",
        "-destroy",
        "-var-file=a.tfvars",
    ]


def test_apply_takes_exactly_the_saved_plan_without_auto_approve() -> None:
    args = apply_args()
    assert args[0] == "apply" and args[-1] == "tfplan"
    assert "-input=false" in args and "-json" in args and "-no-color" in args
    assert "-auto-approve" not in args


def test_show_state_pull_version() -> None:
    assert show_args("tfplan") == ["show", "-json", "-no-color", "tfplan"]
    assert show_args() == ["show", "-json", "-no-color"]
    assert state_pull_args() == ["state", "pull"]
    assert version_args() == ["version", "-json"]
