"""benchmarks/token_miss.py runs at a small size with every flag, on SQLite and on
a throwaway PostgreSQL: it times every way and counts a miss's round trips, one
for the SELECT (and the pool's liveness check) in autocommit, three more in a
transaction."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _run(tmp_path: Path, *where: str) -> dict:
    out = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, str(BENCH / "token_miss.py"), *where, "--tokens", "60",
         "--providers", "5", "--misses", "20", "--rounds", "2", "--json", str(out)],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "20 misses x 2 rounds" in done.stdout
    got: dict = json.loads(out.read_text())
    for way, r in got.items():
        if way != "args":
            assert len(r["cpu"]) == len(r["wall"]) == 2 and min(r["cpu"]) > 0, way
    return got


def test_on_sqlite(tmp_path: Path) -> None:
    got = _run(tmp_path, "--db", f"sqlite:///{tmp_path / 'miss.db'}")
    assert set(got) == {"args", "transaction", "code"}
    assert got["code"]["round_trips"] is None and got["code"]["db_cpu"] == []


@pytest.mark.needs_postgres
def test_on_postgresql(tmp_path: Path) -> None:
    if not shutil.which("initdb") and not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.skip("needs PostgreSQL server binaries (initdb, pg_ctl)")
    got = _run(tmp_path, "--pg-temp")
    assert set(got) == {"args", "transaction", "code", "code, no pre-ping"}
    if got["code"]["round_trips"] is None:
        pytest.skip("libpq's protocol trace needs libpq 14 or later")
    assert got["transaction"]["round_trips"] == 4  # ping, BEGIN, SELECT, ROLLBACK
    assert got["code"]["round_trips"] == 2  # ping, SELECT
    assert got["code, no pre-ping"]["round_trips"] == 1
