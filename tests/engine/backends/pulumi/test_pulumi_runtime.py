"""Backend URL, file-backend root, passphrase and the recovery command lines."""

from __future__ import annotations

import shlex
import stat
from pathlib import Path

import pytest
from dreamlake.engine.backends.pulumi.project import PulumiProject
from dreamlake.engine.backends.pulumi.runtime import (
    backend_url,
    cli_command,
    command_env,
    find_cli,
    local_root,
)
from pulumi_helpers import LOCAL_OK, write_provider


@pytest.fixture
def project(tmp_path: Path) -> PulumiProject:
    return PulumiProject.of(write_provider(tmp_path, config=LOCAL_OK))


def test_default_url_is_the_provider_state_dir(project: PulumiProject) -> None:
    url = backend_url(project, {})
    assert url == f"file://{project.dir / '.state'}"
    assert local_root(url, project) == project.dir / ".state"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("file:///srv/state", Path("/srv/state")),
        ("file:///srv/state?no_tmp_dir=true", Path("/srv/state")),
        ("file://~", Path.home()),
        ("file://~/states", Path.home() / "states"),
        ("s3://bucket/prefix", None),
        ("https://api.pulumi.com", None),
    ],
)
def test_local_root(project: PulumiProject, url: str, expected: Path | None) -> None:
    assert local_root(url, project) == expected


def test_relative_file_url_is_relative_to_the_project(project: PulumiProject) -> None:
    assert local_root("file://state", project) == project.dir / "state"


def test_passphrase_file_is_generated_once_with_mode_0600(project: PulumiProject) -> None:
    first = command_env(project, {})
    secret = project.passphrase.read_text()
    again = command_env(project, {})
    assert first == again and project.passphrase.read_text() == secret
    assert stat.S_IMODE(project.passphrase.stat().st_mode) == 0o600
    assert (project.dir / ".state").is_dir()


def test_passphrase_from_the_environment_wins(project: PulumiProject) -> None:
    env = command_env(project, {"PULUMI_CONFIG_PASSPHRASE_FILE": "/run/secrets/pp"})
    assert "PULUMI_CONFIG_PASSPHRASE_FILE" not in env and not project.passphrase.exists()


def test_cli_command_is_pasteable(tmp_path: Path) -> None:
    d = write_provider(tmp_path / "with space", config=LOCAL_OK)
    cmd = cli_command(PulumiProject.of(d), "cancel --yes", {})
    parts = shlex.split(cmd)
    assert parts[:2] == ["cd", str(d / "pulumi")]
    assert f"PULUMI_BACKEND_URL=file://{d / 'pulumi' / '.state'}" in parts
    stack = PulumiProject.of(d).stack
    assert parts[-8:] == [
        "pulumi",
        "cancel",
        "--yes",
        "--stack",
        stack,
        "--config-file",
        "Pulumi.lab.yaml",
        "--non-interactive",
    ]
    assert not (d / "pulumi" / ".passphrase").exists()  # describing a command writes nothing


def test_find_cli_looks_in_pulumi_home(tmp_path: Path) -> None:
    home = tmp_path / "ph"
    (home / "bin").mkdir(parents=True)
    binary = home / "bin" / "pulumi"  # TEST DOUBLE file: found, never run
    binary.write_text("#!/bin/sh\n")
    assert find_cli({"PATH": "", "PULUMI_HOME": str(home)}) is None
    binary.chmod(0o755)
    assert find_cli({"PATH": "", "PULUMI_HOME": str(home)}) == binary


def test_find_cli_looks_where_the_sdk_installs_it(tmp_path: Path) -> None:
    """``PulumiCommand.install()`` puts the CLI matching the SDK under
    ``~/.pulumi/versions/<v>/bin``: the SDK's own version first, then the newest."""
    from dreamlake.engine.backends.pulumi.runtime import sdk_version

    home = tmp_path / "ph"
    made = {}
    for v in ("3.1.0", "3.10.0", sdk_version() or "9.9.9"):
        b = home / "versions" / v / "bin" / "pulumi"  # TEST DOUBLE file: found, never run
        b.parent.mkdir(parents=True, exist_ok=True)
        b.write_text("#!/bin/sh\n")
        b.chmod(0o755)
        made[v] = b
    env = {"PATH": "", "PULUMI_HOME": str(home)}
    assert find_cli(env) == made[sdk_version() or "9.9.9"]
    made[sdk_version() or "9.9.9"].unlink()
    assert find_cli(env) == made["3.10.0"]
