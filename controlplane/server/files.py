"""File modes the server insists on at every start: the data dir 0700, the SQLite
database (and its -wal / -shm / -journal companions), the admin token and the key
file 0600, whatever existed before. A file we cannot tighten stops the start with
a message saying what to run."""

from __future__ import annotations

import os
import stat
from pathlib import Path

SECRET_FILES = ("admin.token", "secret.key")
DB_SUFFIXES = ("", "-wal", "-shm", "-journal")


class FileModeError(RuntimeError):
    """A file or directory is more open than allowed and cannot be tightened."""


def _tighten(path: Path, mode: int) -> None:
    current = stat.S_IMODE(path.stat().st_mode)
    if current & ~mode & 0o777:
        try:
            path.chmod(mode)
        except OSError as exc:
            raise FileModeError(
                f"{path} has mode {current:o} and cannot be set to {mode:o} ({exc.strerror}); "
                f"run: chmod {mode:o} {path}"
            ) from None


def secure_data_dir(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    _tighten(data_dir, 0o700)
    for name in SECRET_FILES:
        if (data_dir / name).is_file():
            _tighten(data_dir / name, 0o600)


def sqlite_path(url: str) -> Path | None:
    from sqlalchemy import make_url

    if not url.startswith("sqlite"):
        return None
    database = make_url(url).database
    if not database or database == ":memory:":
        return None
    return Path(database)


def secure_db_files(url: str, *, create: bool = False) -> None:
    """0600 on the SQLite file and its companions; with ``create``, make the database
    file 0600 before SQLite opens it (SQLite gives its companions the same mode)."""
    path = sqlite_path(url)
    if path is None:
        return
    if create and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    for suffix in DB_SUFFIXES:
        companion = path.with_name(path.name + suffix)
        if companion.is_file():
            _tighten(companion, 0o600)
