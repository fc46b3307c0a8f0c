"""``atomic_write``: a temp file and a rename, never a half-written file in place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dreamlake.engine.settings import fsutil
from dreamlake.engine.settings.fsutil import atomic_write


@pytest.mark.parametrize("durable", [True, False])
def test_writes_whole_files_and_leaves_no_temp(
    tmp_path: Path, durable: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(fsutil.os, "fsync", fsync)
    target = tmp_path / "sub" / "f.json"
    assert atomic_write(target, "one", durable=durable)
    assert atomic_write(target, b"two", mode=0o600, durable=durable)
    assert target.read_text() == "two" and (target.stat().st_mode & 0o777) == 0o600
    assert not atomic_write(target, "three", overwrite=False, durable=durable)
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]
    assert bool(synced) is durable  # a cache entry skips the fsync, a user's file never


def test_a_path_is_a_string_or_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine passes ``Path`` objects, the apply started ahead strings (it runs
    before ``pathlib`` is imported), a relative name is written in the working
    directory: each the same file, its folders made, no temp file left."""
    monkeypatch.chdir(tmp_path)
    assert atomic_write(str(tmp_path / "a" / "b" / "s.json"), "one")
    assert atomic_write(Path("rel.json"), b"two")
    assert atomic_write("plain.json", "three", mode=0o640)
    assert (tmp_path / "a/b/s.json").read_text() == "one"
    assert (tmp_path / "rel.json").read_text() == "two"
    assert ((tmp_path / "plain.json").stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "plain.json", "rel.json"]
    assert [p.name for p in (tmp_path / "a/b").iterdir()] == ["s.json"]
    (tmp_path / "file").write_text("")
    with pytest.raises(FileExistsError):  # a file where a folder is needed, as before
        atomic_write(tmp_path / "file" / "x.json", "four")
