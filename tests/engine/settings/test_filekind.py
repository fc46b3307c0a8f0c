"""What a path is when it is not a regular file, without opening it."""

from __future__ import annotations

import os
from pathlib import Path

from dreamlake.engine.settings.filekind import not_regular


def test_regular_and_missing_are_none(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    (tmp_path / "link").symlink_to(f)
    assert not_regular(f) is None and not_regular(tmp_path / "link") is None
    assert not_regular(tmp_path / "missing") is None
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    assert not_regular(tmp_path / "dangling") is None


def test_fifo_device_directory_and_links_to_them(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    assert not_regular(tmp_path / "fifo") == "a FIFO (named pipe)"
    assert not_regular("/dev/zero") == "a character device"
    assert not_regular(tmp_path) == "a directory"
    (tmp_path / "z").symlink_to("/dev/zero")
    assert not_regular(tmp_path / "z") == "a link to /dev/zero, a character device"
