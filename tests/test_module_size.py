"""The package's modules stay small enough to read whole: no source file of the
installed folders (those ``setup.py`` maps into ``dreamlake.*``) is over 600 lines.
A module that grows past it is split along its seams, not allowed a little more."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("dreamlake", "engine", "stacks", "templates", "cli", "controlplane")
LIMIT = 600


def _sources() -> list[Path]:
    return sorted(
        p
        for folder in FOLDERS
        for p in (REPO / folder).rglob("*.py")
        if "__pycache__" not in p.parts
    )


def test_the_walk_finds_the_package() -> None:
    names = {p.relative_to(REPO).as_posix() for p in _sources()}
    assert "engine/verbs/reconcile.py" in names
    assert "cli/mcp/server.py" in names


def test_no_source_file_is_over_600_lines() -> None:
    long = {
        p.relative_to(REPO).as_posix(): n
        for p in _sources()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > LIMIT
    }
    assert long == {}, f"split these along their seams (at most {LIMIT} lines each)"
