"""A `.dreamrc` that is not a regular file (a FIFO, a link to /dev/zero) is never
opened, and never taken for absent: found by the walk up, named by `--dreamrc` or by
`$DREAMRC`, the error says what it is and that it was not read. Real `dreamlake`
processes with a timeout (a FIFO that were opened would hang them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dreamlake.engine.settings.dreamrc import DreamrcError, local_dreamrc_path

DREAMLAKE = [sys.executable, "-m", "dreamlake.cli.main"]


def _providers(cwd: Path, *args: str, **env: str) -> dict:  # type: ignore[type-arg]
    base = {k: v for k, v in os.environ.items() if k not in ("DREAMRC",)}
    p = subprocess.run(
        [*DREAMLAKE, "providers", "--json", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        env={**base, "HOME": str(cwd), **env},
    )
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 1, (p.stdout, p.stderr)
    return json.loads(p.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "rc.fifo"
    os.mkfifo(path)
    return path


def test_a_fifo_found_walking_up_is_named_not_skipped(tmp_path: Path) -> None:
    project = tmp_path / "project"
    nested = project / "a" / "b"
    nested.mkdir(parents=True)
    os.mkfifo(project / ".dreamrc")
    doc = _providers(nested)
    assert doc["kind"] == "dreamrc"
    assert str(project / ".dreamrc") in doc["error"]
    assert "a FIFO" in doc["error"] and "it was not read" in doc["error"]


def test_a_link_to_dev_zero_found_walking_up_is_named(tmp_path: Path) -> None:
    (tmp_path / ".dreamrc").symlink_to("/dev/zero")
    doc = _providers(tmp_path)
    assert "a link to /dev/zero, a character device" in doc["error"]
    assert "it was not read" in doc["error"]


def test_dreamrc_flag_naming_a_fifo(tmp_path: Path, fifo: Path) -> None:
    doc = _providers(tmp_path, "--dreamrc", str(fifo))
    assert "--dreamrc names a FIFO" in doc["error"] and "it was not read" in doc["error"]
    assert "does not exist" not in doc["error"]


def test_dreamrc_variable_naming_dev_zero(tmp_path: Path) -> None:
    doc = _providers(tmp_path, DREAMRC="/dev/zero")
    assert "$DREAMRC names a character device" in doc["error"]
    assert "it was not read" in doc["error"] and "does not exist" not in doc["error"]


def test_a_missing_file_still_says_it_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(DreamrcError, match="does not exist"):
        local_dreamrc_path(tmp_path / "nothing")


def test_a_regular_file_nearer_than_a_fifo_is_read(tmp_path: Path) -> None:
    """Only what stands between the cwd and the file found is looked at."""
    os.mkfifo(tmp_path / ".dreamrc")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / ".dreamrc").write_text("providers: {}\n")
    assert local_dreamrc_path(cwd=inner) == (inner / ".dreamrc", "cwd")
