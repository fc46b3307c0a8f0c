"""``apply --yes`` of a saved plan, with terraform's apply started ahead by the console
script: what the rest of the run imports while that terraform runs beside it.

On a 2-core machine every module imported after terraform's start takes CPU from
terraform (and its provider plugin); the apply path takes the started run over and
needs none of these (real terraform, a real ``local`` provider folder)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from console_lab import decide, lab_env

NOT_IMPORTED = (
    # a run started ahead is finished without subprocess (runner imports it to start one)
    "subprocess",
    "_posixsubprocess",
    "selectors",
    "signal",
    "locale",
    # the contract reads its annotations with contract/forms.py
    "typing",
    # next actions carry no folder to quote here
    "shlex",
    # the state lock's probe packs struct flock by hand
    "struct",
    # the user cache names its entries with the engine's SHA-256, loaded already
    "zlib",
    # what the backend needs only to run terraform itself or to plan
    "dreamlake.engine.backends.terraform.required",
    "dreamlake.engine.backends.terraform.initmark",
    "dreamlake.engine.backends.terraform.cliconfig",
    "dreamlake.engine.backends.terraform.uievents",
    "dreamlake.engine.backends.terraform.tfexec.init",
    "dreamlake.engine.backends.terraform.tfexec.validate",
    "dreamlake.engine.backends.protocol",
    "dreamlake.engine.contract.event_types",
    "dreamlake.engine.verbs.plan",
)

APPLY = (
    "import json, sys\n"
    "spawned = []\n"
    "sys.addaudithook(lambda e, a: spawned.append(e)\n"
    "                 if e in ('os.posix_spawn', 'subprocess.Popen') else None)\n"
    "from dreamlake.cli.entry import main\n"
    "rc = main(sys.argv[1:])\n"
    "seen = sorted(m for m in {names!r} if m in sys.modules)\n"
    "print(json.dumps({{'rc': rc, 'spawned': spawned, 'seen': seen}}), file=sys.stderr)\n"
)


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def test_apply_started_ahead_imports_no_runner_typing_or_plan_modules(tmp_path: Path) -> None:
    """Also: the plan before it and the status after it import no ``typing``."""
    terraform = shutil.which("terraform", path=os.environ.get("PATH"))
    if terraform is None:
        pytest.skip("no terraform binary on PATH")
    env = lab_env(tmp_path, terraform, DREAMLAKE_CACHE_DIR=str(tmp_path / "cache"))
    create = ["provider", "create", "-n", "lab", "--provider", "local"]
    created = _run(["-m", "dreamlake.cli.main", *create], tmp_path, env)
    assert created.returncode == 0, created.stderr
    decide(tmp_path)
    plan = ["provider", "plan", "-n", "lab", "--json"]
    first = _run(["-m", "dreamlake.cli.entry", *plan], tmp_path, env)  # initialises
    assert json.loads(first.stdout)["status"] == "ready", first.stdout + first.stderr
    planned = _run(["-c", APPLY.format(names=("typing",)), *plan], tmp_path, env)
    assert json.loads(planned.stdout)["status"] == "ready", planned.stdout + planned.stderr
    # plan and status read the contract without typing too (5 ms of CPU each)
    assert json.loads(planned.stderr.strip().splitlines()[-1])["seen"] == []

    code = APPLY.format(names=NOT_IMPORTED)
    done = _run(["-c", code, "provider", "apply", "-n", "lab", "--yes", "--json"], tmp_path, env)
    assert json.loads(done.stdout)["status"] == "applied", done.stdout + done.stderr
    got = json.loads(done.stderr.strip().splitlines()[-1])
    # terraform's apply was started ahead (posix_spawn), and nothing else was started
    assert got == {"rc": 0, "spawned": ["os.posix_spawn"], "seen": []}

    status = ["provider", "status", "-n", "lab", "--json"]
    seen = _run(["-c", APPLY.format(names=("typing",)), *status], tmp_path, env)
    assert json.loads(seen.stdout)["status"] == "applied", seen.stdout + seen.stderr
    assert json.loads(seen.stderr.strip().splitlines()[-1])["seen"] == []
