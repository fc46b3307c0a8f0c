"""``pathnames``: paths as strings, spelled and checked as ``pathlib`` spells and
checks them (the plan and the apply started ahead compare names the engine wrote
from its ``Path`` objects); and ``planinputs``' names found with ``os`` alone, the
same files in the same order as the ``Path`` walk the plan record hashes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import pathnames
from dreamlake.engine.backends.terraform.planinputs import input_files, input_names

SPELLINGS = ["", ".", "./", "a", "a/", "a//b", "a/./b/.", "./a/../b", "/", "//", "///", "//a/b",
             "///a//b/", "/a/b/..", "~", "~/x", "~nobody-here/x", ".dream", "a/.dream/"]  # fmt: skip


@pytest.mark.parametrize("path", SPELLINGS)
def test_names_are_spelled_as_pathlib_spells_them(path: str) -> None:
    assert pathnames.lexical(path) == str(Path(path))
    assert pathnames.join(path, ".dreamrc") == str(Path(path) / ".dreamrc")
    assert pathnames.join("/top", path) == str(Path("/top", path))
    spelled = pathnames.lexical(path)
    assert pathnames.up(spelled) == [spelled, *map(str, Path(path).parents)]


@pytest.mark.parametrize("path", ["~", "~/x", "~nobody-here/x", "x/~", "a"])
def test_a_home_is_found_as_pathlib_finds_it(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone//")
    try:
        want: str | None = str(Path(path).expanduser())
    except RuntimeError:
        want = None  # no such user: pathlib raises, and so nothing starts ahead
    if want is None:
        with pytest.raises(RuntimeError):
            pathnames.expanduser(pathnames.lexical(path))
    else:
        assert pathnames.lexical(pathnames.expanduser(pathnames.lexical(path))) == want


def test_files_are_found_as_pathlib_finds_them(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    names = ["file", "dir", "missing", "loop", "dangling", "file/under", "nul\0byte"]
    for name in names:
        p = tmp_path / name
        assert pathnames.exists(str(p)) is p.exists(), name
        assert pathnames.is_file(str(p)) is p.is_file(), name
    pathnames.unlink(str(tmp_path / "file"))
    pathnames.unlink(str(tmp_path / "file"))  # missing: nothing to do
    assert not (tmp_path / "file").exists()


def test_a_folder_that_cannot_be_read_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``Path.exists`` raises (a folder this user may not search: tests run as
    root here, so the refusal is made by ``os.stat``), these raise too, and nothing
    starts ahead."""

    def refused(path: str) -> os.stat_result:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(pathnames.os, "stat", refused)
    with pytest.raises(PermissionError):
        pathnames.exists("/x/.dreamrc")
    with pytest.raises(PermissionError):
        pathnames.is_file("/x/.dreamrc")


def _walked(tf_dir: Path) -> list[Path]:
    """The inputs as ``planinputs`` found them with ``Path`` (its earlier spelling)."""
    out: list[Path] = []
    for root, dirs, files in os.walk(tf_dir):
        dirs[:] = sorted(
            d for d in dirs if d != ".terraform" and not d.startswith("terraform.tfstate")
        )
        for name in sorted(files):
            if name.endswith((".tf", ".tf.json", ".tfvars", ".tfvars.json")) or (
                name == ".terraform.lock.hcl" and Path(root) == tf_dir
            ):
                out.append(Path(root) / name)
    return out


def test_input_names_are_the_files_the_plan_record_hashes(tmp_path: Path) -> None:
    tf = tmp_path / "terraform"
    for name in ["main.tf", "b.tfvars.json", "a.tf.json", ".terraform.lock.hcl", "x.txt",
                 "mod/inner.tf", "mod/.terraform.lock.hcl", "mod/deep/z.tfvars", "z/a.tf",
                 ".terraform/ignored.tf", "terraform.tfstate.d/ws/s.tf"]:  # fmt: skip
        (tf / name).parent.mkdir(parents=True, exist_ok=True)
        (tf / name).write_text("#\n")
    names = input_names(tf)
    assert names == [p.relative_to(tf).as_posix() for p in _walked(tf)]
    assert names == [".terraform.lock.hcl", "a.tf.json", "b.tfvars.json", "main.tf",
                     "mod/inner.tf", "mod/deep/z.tfvars", "z/a.tf"]  # fmt: skip
    assert input_names(str(tf)) == names
    assert input_files(tf) == _walked(tf)
