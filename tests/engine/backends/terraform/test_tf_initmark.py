"""``plan`` runs ``init`` only when what init reads changed (``initmark``): real
terraform for the working directory, a filesystem mirror of hashicorp/aws where a
lock file and an upgrade are needed (skipped without one)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import BACKEND, initmark
from dreamlake.engine.backends.terraform.runner import run_env
from dreamlake.engine.contract import events

MAIN = """
terraform {
  required_version = ">= 1.0.0"
}

variable "name" {
  type = string
}

output "greeting" {
  value = "hello ${var.name}"
}
"""

MIRROR = Path(os.environ.get("DREAMLAKE_TF_PLUGIN_MIRROR") or "/opt/tf-plugins")
AWS = MIRROR / "registry.terraform.io" / "hashicorp" / "aws"
AWS_BUILDS = sorted(AWS.glob("*/linux_amd64")) if AWS.is_dir() else []
needs_mirror = pytest.mark.skipif(
    not AWS_BUILDS, reason=f"needs a filesystem mirror holding hashicorp/aws at {MIRROR}"
)


def _provider(tmp_path: Path) -> Path:
    tf = tmp_path / "p" / "terraform"
    tf.mkdir(parents=True)
    (tf / "main.tf").write_text(MAIN)
    (tf / "terraform.tfvars").write_text('name = "abcd"\n')
    return tf.parent


def _steps(pdir: Path) -> list[str]:
    """The terraform steps one ``plan`` ran (its progress events)."""
    seen: list[events.ProgressEvent] = []
    with events.recording(seen.append, verb="plan", provider="p"):
        out = BACKEND.plan(pdir)
    assert out.result == "ok", out
    return [e.step for e in seen if e.type == "step" and e.step]


def _needed(pdir: Path) -> bool:
    tf = pdir / "terraform"
    return initmark.check(tf, os.environ["TERRAFORM_BINARY"], run_env(pdir)).needed


def test_what_init_reads_of_a_file() -> None:
    text = (
        'terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws" }\n  }\n}\n'
        'provider "aws" {\n  region = "eu-west-1"\n}\n'
        'module "net" {\n  source = "./net"\n}\n'
        'resource "random_id" "a" {\n  byte_length = 4\n}\n'
        'data "google_project" "p" {\n  provider = google-beta\n}\n'
        'output "x" {\n  value = 1\n}\n'
    )
    got = initmark.init_inputs(text)
    assert got[0].startswith("terraform {") and 'source = "hashicorp/aws"' in got[0]
    assert got[1].startswith('provider "aws" {') and "eu-west-1" in got[1]
    assert got[2].startswith('module "net" {')
    assert got[3:] == ["google", "google-beta", "random"]
    assert not any("output" in g for g in got)


def test_the_fingerprint_moves_with_each_input_init_reads(tmp_path: Path) -> None:
    """Without running terraform: a changed versions.tf, provider block, lock file or
    module call changes the fingerprint (the next plan inits); values, outputs and
    comments outside those blocks do not."""
    tf = _provider(tmp_path) / "terraform"
    binary = str(tmp_path / "terraform")
    env = {"TF_CLI_CONFIG_FILE": os.devnull}

    def moved(path: str, text: str) -> bool:
        before = initmark.fingerprint(tf, binary, env)
        (tf / path).write_text(text)
        return initmark.fingerprint(tf, binary, env) != before

    assert not moved("terraform.tfvars", 'name = "other"\n')
    assert not moved("outputs.tf", 'output "o" {\n  value = var.name\n}\n')
    assert moved("versions.tf", 'terraform {\n  required_version = ">= 1.0.0"\n}\n')
    assert moved("versions.tf", 'terraform {\n  required_version = ">= 1.1.0"\n}\n')
    assert moved(
        "versions.tf",
        'terraform {\n  required_providers {\n    null = { source = "hashicorp/null" }\n  }\n}\n',
    )
    assert moved("providers.tf", 'provider "null" {\n}\n')
    assert moved("providers.tf", 'provider "null" {\n  alias = "b"\n}\n')
    assert moved("res.tf", 'resource "random_id" "a" {\n  byte_length = 4\n}\n')
    assert moved(".terraform.lock.hcl", 'provider "registry.terraform.io/hashicorp/null" {\n}\n')
    assert moved(
        ".terraform.lock.hcl",
        'provider "registry.terraform.io/hashicorp/null" {\n  version = "3.2.2"\n}\n',
    )
    assert moved("mod.tf", 'module "m" {\n  source = "./m"\n}\n')
    (tf / "m").mkdir()
    assert moved("m/main.tf", 'provider "null" {\n}\n')  # inside a local module it calls
    assert not moved("m/vars.tf", 'variable "v" {\n  default = 1\n}\n')


@pytest.mark.slow
def test_a_second_plan_skips_init_and_an_edit_of_what_init_reads_does_not(
    terraform_binary: str, tmp_path: Path
) -> None:
    pdir = _provider(tmp_path)
    tf = pdir / "terraform"
    assert _steps(pdir) == ["init", "plan"]
    assert (tf / initmark.INIT_FILE).is_file()
    # Unchanged, or only values and outputs changed: no init.
    assert _steps(pdir) == ["plan"]
    (tf / "terraform.tfvars").write_text('name = "abcde"\n')
    (tf / "outputs.tf").write_text('output "again" {\n  value = var.name\n}\n')
    assert _steps(pdir) == ["plan"]
    # An edited versions.tf (its terraform block): init again.
    (tf / "versions.tf").write_text('terraform {\n  required_version = ">= 0.15.0"\n}\n')
    assert _steps(pdir) == ["init", "plan"]
    assert _steps(pdir) == ["plan"]
    (tf / "versions.tf").write_text('terraform {\n  required_version = ">= 1.0.0"\n}\n')
    assert _steps(pdir) == ["init", "plan"]
    # A provider block: init again.
    (tf / "providers.tf").write_text('provider "terraform" {\n}\n')
    assert _steps(pdir) == ["init", "plan"]
    assert _steps(pdir) == ["plan"]
    # The working directory deleted, or the record gone: init again.
    shutil.rmtree(tf / ".terraform", ignore_errors=True)
    (tf / initmark.INIT_FILE).unlink()
    assert _steps(pdir) == ["init", "plan"]


@pytest.mark.slow
def test_another_terraform_binary_inits_again(tmp_path: Path) -> None:
    from dreamlake.engine.backends.terraform.binaries import available

    found = available()
    if len(found) < 2:
        pytest.skip("needs two terraform versions")
    pdir = _provider(tmp_path)
    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("TF_CLI_CONFIG_FILE", os.devnull)
        mp.setenv("TERRAFORM_BINARY", found[-1][1])
        assert _steps(pdir) == ["init", "plan"]
        assert not _needed(pdir)
        mp.setenv("TERRAFORM_BINARY", found[0][1])
        assert _needed(pdir)
        assert _steps(pdir) == ["init", "plan"]
    finally:
        mp.undo()


def _mirror(tmp_path: Path, versions: list[str]) -> Path:
    """A filesystem mirror offering the mirrored aws build under each of ``versions``."""
    mirror = tmp_path / "mirror"
    for v in versions:
        where = mirror / "registry.terraform.io" / "hashicorp" / "aws" / v
        where.mkdir(parents=True, exist_ok=True)
        if not (where / "linux_amd64").exists():
            (where / "linux_amd64").symlink_to(AWS_BUILDS[-1])
    return mirror


def _aws_provider(tmp_path: Path, mirror: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pdir = _provider(tmp_path)
    (pdir / "terraform" / "versions.tf").write_text(
        'terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws" }\n  }\n}\n'
    )
    rc = tmp_path / "mirror.tfrc"
    rc.write_text(
        f'provider_installation {{\n  filesystem_mirror {{\n    path = "{mirror}"\n  }}\n}}\n'
    )
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", str(rc))
    return pdir


def _init_as_plan_does(pdir: Path) -> None:
    from dreamlake.engine.backends.terraform.backend import run_init
    from dreamlake.engine.backends.terraform.runner import terraform_binary

    env = run_env(pdir)
    run_init(pdir / "terraform", pdir, terraform_binary(), env, None)


@needs_mirror
@pytest.mark.slow
def test_an_edited_lock_file_inits_again(
    terraform_binary: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdir = _aws_provider(tmp_path, _mirror(tmp_path, ["5.100.0"]), monkeypatch)
    _init_as_plan_does(pdir)
    lock = pdir / "terraform" / initmark.LOCK_HCL
    assert lock.is_file() and not _needed(pdir)
    lock.write_text(lock.read_text() + "# pinned by hand\n")
    assert _needed(pdir)
    _init_as_plan_does(pdir)
    assert not _needed(pdir)


@needs_mirror
@pytest.mark.slow
def test_a_users_init_upgrade_inits_again(
    terraform_binary: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = _mirror(tmp_path, ["5.99.0"])
    pdir = _aws_provider(tmp_path, mirror, monkeypatch)
    tf = pdir / "terraform"
    _init_as_plan_does(pdir)
    assert '"5.99.0"' in (tf / initmark.LOCK_HCL).read_text() and not _needed(pdir)
    _mirror(tmp_path, ["5.99.0", "5.100.0"])  # a newer release reaches the mirror
    assert not _needed(pdir)
    subprocess.run(
        [terraform_binary, "init", "-upgrade", "-input=false", "-no-color"],
        cwd=tf,
        env=run_env(pdir),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
    )
    assert '"5.100.0"' in (tf / initmark.LOCK_HCL).read_text()
    assert _needed(pdir)


@pytest.mark.slow
def test_an_initialised_plan_and_its_apply_run_one_terraform_each(
    terraform_binary: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``init``, ``validate``, ``show`` or ``version`` beside the plan and the apply
    (the version is the init record's while the binary is the same file)."""
    from dreamlake.engine.backends.terraform import backend, required

    pdir = _provider(tmp_path)
    assert BACKEND.plan(pdir).result == "ok"
    ran: list[str] = []
    for module in (backend, required):
        real = module.run

        def spy(args: list[str], *a: object, _real: object = real, **kw: object) -> object:
            ran.append(args[0])
            return _real(args, *a, **kw)  # type: ignore[operator]

        monkeypatch.setattr(module, "run", spy)
    assert BACKEND.plan(pdir).result == "ok"
    assert ran == ["plan"]
    assert BACKEND.apply(pdir).result == "applied"
    assert ran == ["plan", "apply"]


@pytest.mark.slow
def test_an_invalid_configuration_fails_as_validate_did(
    terraform_binary: str, tmp_path: Path
) -> None:
    """The plan reports the error; ``validate`` then runs once so the error names the
    step that always reported it (same message, same document)."""
    from dreamlake.engine.backends.terraform.runner import TerraformFailed

    pdir = _provider(tmp_path)
    assert _steps(pdir) == ["init", "plan"]
    (pdir / "terraform" / "bad.tf").write_text('output "z" {\n  value = aws_instance.nope.id\n}\n')
    with pytest.raises(TerraformFailed) as e:
        BACKEND.plan(pdir)
    assert e.value.message.startswith("terraform validate failed (exit 1): Reference to undeclared")
    assert e.value.argv and e.value.argv[1] == "validate"
    (pdir / "terraform" / "bad.tf").write_text('output "z" {\n  value = \n}\n')
    with pytest.raises(TerraformFailed) as e:
        BACKEND.plan(pdir)
    assert e.value.message.startswith("terraform init failed (exit 1)")


def test_the_record_is_git_ignored_with_the_saved_plan() -> None:
    import fnmatch

    from dreamlake.engine.world.scaffold import GITIGNORE

    path = f"providers/lab/terraform/{initmark.INIT_FILE}"
    assert any(
        fnmatch.fnmatch(path, line) for line in GITIGNORE.splitlines() if line and line[0] != "#"
    )
