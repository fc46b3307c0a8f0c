"""``--help`` from the user cache (``cli/helpcache.py``): the bytes typer prints, at
the width click would wrap to, without importing typer once remembered."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from dreamlake.cli.helpcache import columns, help_request


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["--help"], True),
        (["-h"], True),
        (["provider", "--help"], True),
        (["provider", "status", "-h"], True),
        (["lakeshore-x", "a", "b", "--help"], True),
        (["a", "b", "c", "d", "--help"], False),  # deeper than any command
        (["provider", "status", "-n", "lab", "--help"], False),  # an option: typer's
        (["--help", "provider"], False),
        (["provider", "--json", "--help"], False),
        (["../x", "--help"], False),
        ([], False),
        (["provider"], False),
    ],
)
def test_which_lines_are_a_plain_help(argv: list[str], want: bool) -> None:
    assert help_request(argv) is want


def test_columns_is_what_click_would_wrap_to(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    for value in ("61", "wide", "0", "-3", None):  # set, unusable, unset
        if value is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", value)
        assert columns() == shutil.get_terminal_size().columns, value
    assert columns() > 0


def _ask(args: list[str], cache: Path, width: int) -> tuple[int, str, bool]:
    """(exit code, stdout, whether typer was imported) of one ``dreamlake ARGS``."""
    code = (
        "import sys; from dreamlake.engine.settings import usercache; usercache.RACY_SECONDS = 0; "
        "from dreamlake.cli.entry import main; "
        f"rc = main({args!r}); sys.stdout.flush(); "
        "print('\\n@typer', 'typer' in sys.modules, file=sys.stderr); sys.exit(rc)"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cache), "COLUMNS": str(width)}
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**env, "DREAMLAKE_CACHE_DIR": str(cache)},
    )
    return p.returncode, p.stdout, p.stderr.rsplit("@typer", 1)[-1].split()[0] == "True"


def _full(args: list[str], width: int, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dreamlake.cli.main", *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "COLUMNS": str(width)},
    )


@pytest.mark.parametrize("args", [["--help"], ["provider", "status", "-h"]])
def test_a_remembered_help_is_the_same_bytes_without_typer(args: list[str], tmp_path: Path) -> None:
    for width in (100, 60):
        full = _full(args, width, tmp_path)
        first = _ask(args, tmp_path, width)
        again = _ask(args, tmp_path, width)
        assert first == (0, full.stdout, True)
        assert again == (0, full.stdout, False)
    assert len(list((tmp_path / "help").iterdir())) == 2  # one entry per line and width


def test_an_unknown_command_is_typer_s_to_answer_each_time(tmp_path: Path) -> None:
    args = ["nosuch", "--help"]
    full = _full(args, 80, tmp_path)
    for _ in range(2):
        rc, out, typer = _ask(args, tmp_path, 80)
        assert (rc, out, typer) == (full.returncode, full.stdout, True) and rc != 0
    assert not (tmp_path / "help").exists()
