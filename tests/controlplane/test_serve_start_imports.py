"""What ``lakeshore serve`` does not import to start: numpy (a capacity decision),
Alembic (a database to migrate), yaml (a kwargs file), on a fresh data directory
and again on the same one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
