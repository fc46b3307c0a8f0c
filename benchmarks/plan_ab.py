"""`dreamlake provider plan --json`, `status --json` and `apply --yes --json` of two
versions of the code, taking turns, each on a `local` provider folder and user cache
of its own (the same content), with plan_vs_raw.py's way of running and timing them.

    .venv/bin/python benchmarks/plan_ab.py --before REV [--after REV] [--runs 21]
        [--terraform 1.11] [--settle]

Each version is a copy of the package's folders (`git archive REV`, or the working
tree when `--after` is not given) put first on `PYTHONPATH` and compiled, so both
sides import the same way; the console script is this venv's. Per turn and side:
`plan --json` on the unchanged provider (its decision scan's answer remembered) and
`status --json`; then, in turns of their own, `apply --yes --json` of a fresh plan
made untimed just before (the worker name changes every time), and with `--settle`
the same once the variable file is older than the user cache's racy window. Prints
the dreamlake process's own CPU (its children's not counted) and its own wall (the
run's wall minus its terraform processes), median and minimum, ms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import plan_vs_raw as pvr
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.settings.usercache import RACY_SECONDS

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "cli", "controlplane", "stacks", "templates")


def version(rev: str | None, into: Path) -> Path:
    """The code of ``rev`` (None: the working tree) as a ``PYTHONPATH`` entry."""
    src = into / "src"
    src.mkdir(parents=True)
    if rev is None:
        for name in (*PACKAGES, "dreamlake"):
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", rev, *PACKAGES, "dreamlake"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "x", "-C", str(src)], input=archive, check=True)
    site = into / "site" / "dreamlake"
    site.mkdir(parents=True)
    for init in (src / "dreamlake").glob("*.py"):
        shutil.copy(init, site / init.name)
    for name in PACKAGES:
        (site / name).symlink_to(src / name)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], capture_output=True)
    return site.parent


def ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.0f} ({min(xs) * 1000:.0f})" if xs else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--before", required=True, help="a git revision")
    ap.add_argument("--after", help="a git revision (default: the working tree)")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--terraform", default="1.11", help="the binary's version prefix")
    ap.add_argument("--settle", action="store_true", help="also apply with the inputs settled")
    args = ap.parse_args()
    binary = next((b for v, b in available() if v.startswith(args.terraform)), None)
    if binary is None:
        raise SystemExit(f"no terraform {args.terraform} found")
    dreamlake = str(Path(sys.executable).parent / "dreamlake")
    plan = [dreamlake, "provider", "plan", "-n", "bench", "--json"]
    status = [dreamlake, "provider", "status", "-n", "bench", "--json"]
    apply = [dreamlake, "provider", "apply", "-n", "bench", "--yes", "--json"]
    print(f"load average at start: {os.getloadavg()[0]:.1f}; terraform {binary}; {args.runs} runs")
    with tempfile.TemporaryDirectory(prefix="dl-ab-") as name:
        tmp = Path(name)
        sides = {"before": args.before, "after": args.after}
        env: dict[str, dict[str, str]] = {}
        folder: dict[str, tuple[Path, Path]] = {}
        for side, rev in sides.items():
            path = version(rev, tmp / side / "code")
            env[side] = dict(
                {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                TERRAFORM_BINARY=binary,
                TF_CLI_CONFIG_FILE=os.devnull,
                PYTHONPATH=str(path),
                DREAMLAKE_CACHE_DIR=str(tmp / side / "cache"),
            )
            env[side].setdefault("LAKESHORE_URL", "http://127.0.0.1:9")
            folder[side] = pvr.project(tmp / side, "local", env[side])
            pvr.ours(plan, folder[side][0], env[side])  # initialised
        time.sleep(RACY_SECONDS + 0.5)
        for side in sides:  # the scan's answer remembered
            pvr.ours(plan, folder[side][0], env[side])
        rows = ("plan", "status", "apply, right after the plan", "apply, inputs settled")
        cpu: dict[str, dict[str, list[float]]] = {r: {s: [] for s in sides} for r in rows}
        own: dict[str, dict[str, list[float]]] = {r: {s: [] for s in sides} for r in rows}

        def turns(i: int) -> list[str]:
            return list(sides) if i % 2 == 0 else list(sides)[::-1]

        def timed(row: str, side: str, argv: list[str], watch: bool = True) -> None:
            run = pvr.ours(argv, folder[side][0], env[side], cpu[row][side], watch=watch)
            if row.startswith("apply") and "apply" not in run.commands:
                raise SystemExit(f"{side}: apply --yes ran no terraform apply: {run.commands}")
            if watch:
                own[row][side].append(run.own)

        for i in range(args.runs):
            for side in turns(i):
                timed("plan", side, plan)
                timed("status", side, status, watch=False)
        for i in range(args.runs):
            for side in turns(i):
                tfvars = folder[side][1] / "terraform.tfvars"
                tfvars.write_text(pvr.TFVARS.format(worker=f"ab-{side}-{i}"))
                pvr.ours(plan, folder[side][0], env[side])
                timed("apply, right after the plan", side, apply)
        for i in range(args.runs if args.settle else 0):
            for side in turns(i):
                tfvars = folder[side][1] / "terraform.tfvars"
                tfvars.write_text(pvr.TFVARS.format(worker=f"ab-settled-{side}-{i}"))
            time.sleep(RACY_SECONDS + 0.2)
            for side in turns(i):
                pvr.ours(plan, folder[side][0], env[side])
            for side in turns(i):
                timed("apply, inputs settled", side, apply)
    print(f"load average at end: {os.getloadavg()[0]:.1f}; ms, median (minimum)")
    print("| command | CPU before | CPU after | own wall before | own wall after |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        if cpu[row]["before"]:
            print(
                f"| {row} | {ms(cpu[row]['before'])} | {ms(cpu[row]['after'])} "
                f"| {ms(own[row]['before'])} | {ms(own[row]['after'])} |"
            )


if __name__ == "__main__":
    main()
