"""benchmarks/tls_resume.py runs: a daemon's reconnects by its certificate, full
handshakes against resumed sessions, and every reconnect of the resumed rounds
resumes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

pytestmark = pytest.mark.slow


def test_the_resumed_rounds_resume_every_reconnect(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, str(BENCH / "tls_resume.py"), "--requests", "5", "--rounds", "1",
         "--json", str(out)],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(out.read_text())
    assert got["full"]["median"]["resumed"] == 0.0
    assert got["resumed"]["median"]["resumed"] == 1.0
    assert "server" in done.stdout and "resumed" in done.stdout
