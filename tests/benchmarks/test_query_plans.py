"""benchmarks/query_plans.py runs at a small size with every flag: the plans it
reports name the composite indexes after and not before, and it times both sides."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_the_plans_before_and_after(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, str(BENCH / "query_plans.py"), "--providers", "5", "--tokens", "40",
         "--workers", "20", "--items", "100", "--calls", "5", "--http", "--json", str(out)],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(out.read_text())
    after = " ".join(" ".join(steps) for steps in got["after"]["plans"].values())
    before = " ".join(" ".join(steps) for steps in got["before"]["plans"].values())
    for index in ("ix_tokens_namespace_provider_host", "ix_work_items_by_state",
                  "ix_work_items_worker", "ix_capacity_leases_namespace_state"):  # fmt: skip
        assert index in after and index not in before, index
    for side in ("before", "after"):
        for kind in ("mint", "route"):
            assert got[side][kind]["cpu_ms_per_call"] > 0
    assert "== before" in done.stdout and "== after" in done.stdout
