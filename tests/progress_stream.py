"""A ``dreamlake`` command's progress events as the e2e tests read them: the command
run with ``--json --events`` and stdout and stderr into ONE pipe, split into the
NDJSON events and the result document after them, and the checks every stream must
pass (test_progress_events.py with a ``local`` provider, test_ec2_journey.py with
an ``ec2`` one)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from dreamlake.engine.contract.events import ProgressEvent


def run_with_events(
    argv: list[str], cwd: Path, env: dict[str, str]
) -> tuple[int, list[dict[str, Any]], Any]:
    """``argv`` (a ``dreamlake`` command) with ``--json --events`` as an agent runs it
    (stdin closed, ten minutes at most): its exit code, the progress events, then the
    result document (what ``--json`` alone prints), nothing after it."""
    proc = subprocess.run(
        [*argv, "--json", "--events"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
        check=False,
    )
    lines = proc.stdout.splitlines()
    assert "{" in lines, proc.stdout
    start = lines.index("{")  # the result's first line (indented JSON)
    doc = json.loads("\n".join(lines[start:]))
    assert all('"type":' not in ln or ln.startswith("  ") for ln in lines[start:])
    events = [json.loads(ln) for ln in lines[:start] if ln.startswith("{")]
    return proc.returncode, events, doc


def check_stream(events: list[dict[str, Any]], verb: str, status: str) -> list[ProgressEvent]:
    """The events of one command: each valid, numbered and timed in order, from
    ``start`` to an ``end`` that carries the result's status, all of ``verb``."""
    parsed = [ProgressEvent.model_validate(e) for e in events]
    assert [e.seq for e in parsed] == list(range(1, len(parsed) + 1))
    assert [e.elapsed for e in parsed] == sorted(e.elapsed for e in parsed)
    assert parsed[0].type == "start" and parsed[-1].type == "end"
    assert parsed[-1].status == status
    assert all(e.verb == verb for e in parsed)
    return parsed
