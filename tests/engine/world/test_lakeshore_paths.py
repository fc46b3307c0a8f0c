"""engine/world/lakeshore.py finds the server's data dir where ``lakeshore serve`` puts it
(platformdirs' rule) without importing platformdirs on Linux."""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
import pytest
from dreamlake.engine.world.lakeshore import default_data_dir


@pytest.mark.parametrize("xdg", [None, "", "   ", "/srv/data", "relative/dir"])
def test_same_answer_as_platformdirs(monkeypatch: pytest.MonkeyPatch, xdg: str | None) -> None:
    monkeypatch.delenv("LAKESHORE_DATA_DIR", raising=False)
    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    assert default_data_dir() == Path(platformdirs.user_data_dir("lakeshore"))


def test_the_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKESHORE_DATA_DIR", "~/elsewhere")
    assert default_data_dir() == Path("~/elsewhere").expanduser()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux rule")
def test_status_path_does_not_import_platformdirs() -> None:
    import subprocess

    code = (
        "import sys; from dreamlake.engine.world.lakeshore import default_data_dir; "
        "default_data_dir(); print('platformdirs' in sys.modules, 'logging' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
