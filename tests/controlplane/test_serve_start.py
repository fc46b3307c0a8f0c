"""What ``lakeshore serve`` does not do to start: import numpy (a capacity
decision), Alembic (a database to migrate) or yaml (a kwargs file), on a fresh data
directory and again on the same one; run the cycle collector over and over while
it builds the app (``serving.collect_start_up``)."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest
from dreamlake.controlplane.server.fleet import serving
from dreamlake.controlplane.server.settings import Settings

HEAVY = ("numpy", "alembic", "yaml")


def test_a_server_starts_without_its_rarely_used_libraries(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from dreamlake.controlplane.server.app import create_app\n"
        "from dreamlake.controlplane.server.settings import Settings\n"
        f"for _ in range(2): create_app(Settings.from_env(data_dir=Path({str(tmp_path)!r})))\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})), flush=True)\n"
        "import os; os._exit(0)\n"  # not the apps' shut-down: they never started
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("freeze_seconds", [1.0, 0.0])
def test_start_up_is_collected_once_then_the_collector_runs(
    tmp_path: Path, freeze_seconds: float
) -> None:
    settings = Settings.from_env(data_dir=tmp_path)
    settings.gc_freeze_seconds = freeze_seconds
    gc.unfreeze()
    gc.disable()
    try:
        serving.collect_start_up(settings)
        assert gc.isenabled()
        assert (gc.get_freeze_count() > 0) == (freeze_seconds > 0)
        frozen = gc.get_freeze_count()
        serving.collect_start_up(settings)  # the collector on already: nothing to do
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
        gc.enable()
