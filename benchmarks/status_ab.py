"""Versions of the code side by side: `dreamlake provider status --json` of each,
each installed from a wheel into a throwaway venv, on the same applied `local`
provider, with `terraform show -json` there, taking turns (one run of each per
round, so a shared machine's drift hits all alike); also `dreamlake --help` (this
checkout) from the help cache and rendered by typer. Medians, quartiles and the
range of wall and CPU time, in seconds.

    .venv/bin/python benchmarks/status_ab.py --before REV [--before REV2 ...] [--runs 40]
        [--terraform PATH]

Each ``REV`` is a git revision or tree of this repository (``git archive``); the
last side is the working tree as it is. All are checked to print the same bytes.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dreamlake.engine.settings.usercache import RACY_SECONDS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from status_vs_show import TFVARS
from wheel_venv import wheel_venv

REPO = Path(__file__).resolve().parent.parent


def sample(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, bytes]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    got = subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, got.stdout


def summary(xs: list[float]) -> str:
    q = statistics.quantiles(xs, n=4)
    return (
        f"{statistics.median(xs):.3f} (q1 {q[0]:.3f}, q3 {q[2]:.3f}, {min(xs):.3f}–{max(xs):.3f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", action="append", required=True)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--terraform", default="/usr/local/bin/terraform")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(TERRAFORM_BINARY=args.terraform, TF_CLI_CONFIG_FILE=os.devnull)
    # Nothing listens on port 9: the claims request is made (with a token) and refused
    # at once, so each side pays its HTTP client's import and one loopback connect.
    env.setdefault("LAKESHORE_URL", "http://127.0.0.1:9")
    env.setdefault("LAKESHORE_TOKEN", "benchmark-token")
    os.environ.update(TERRAFORM_BINARY=args.terraform, TF_CLI_CONFIG_FILE=os.devnull)
    with tempfile.TemporaryDirectory(prefix="dl-ab-") as tmp_name:
        tmp = Path(tmp_name)
        sides = {}
        for i, rev in enumerate(args.before):
            old_src = tmp / f"src-{i}"
            old_src.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(old_src)], input=archive, check=True)
            sides[rev[:10]] = str(wheel_venv(tmp / f"venv-{i}", old_src))
        sides["working tree"] = str(wheel_venv(tmp / "venv-tree"))
        from dreamlake.engine.verbs.apply import apply
        from dreamlake.engine.verbs.create import create
        from dreamlake.engine.verbs.plan import plan

        proj = tmp / "proj"
        proj.mkdir()
        create("bench", "local", dream_dir=str(proj), probe=False)
        pdir = proj / ".dream/providers/bench"
        (pdir / "terraform/terraform.tfvars").write_text(TFVARS)
        assert plan("bench", dream_dir=str(proj)).status == "ready"
        assert apply("bench", yes=True, dream_dir=str(proj)).status in ("applied", "unclaimed")
        time.sleep(RACY_SECONDS + 0.5)
        dreamlake = str(Path(sys.executable).parent / "dreamlake")
        typer_help = [
            sys.executable,
            "-c",
            "import sys; from dreamlake.cli.entry import _full; sys.exit(_full(['--help']))",
        ]
        commands = {
            **{
                f"status --json ({side})": [script, "provider", "status", "-n", "bench", "--json"]
                for side, script in sides.items()
            },
            "terraform show -json": [args.terraform, "show", "-json", "-no-color"],
            "--help from the cache": [dreamlake, "--help"],
            "--help rendered by typer": typer_help,
        }
        outputs: dict[str, set[bytes]] = {k: set() for k in commands}
        walls: dict[str, list[float]] = {k: [] for k in commands}
        cpus: dict[str, list[float]] = {k: [] for k in commands}
        tf_dir = pdir / "terraform"
        where = {k: tf_dir if k.startswith("terraform") else proj for k in commands}
        for what, argv in commands.items():
            sample(argv, where[what], env)  # warm-up: bytecode, caches
        for _ in range(args.runs):
            for what, argv in commands.items():
                wall, cpu, out = sample(argv, where[what], env)
                walls[what].append(wall)
                cpus[what].append(cpu)
                outputs[what].add(out)
    status_out = set().union(*(v for k, v in outputs.items() if k.startswith("status")))
    help_out = outputs["--help from the cache"] | outputs["--help rendered by typer"]
    print(f"same status bytes: {len(status_out) == 1}; same --help bytes: {len(help_out) == 1}")
    print(f"{'command':<36} {'wall median (q1, q3, min–max)':<44} CPU median (q1, q3, min–max)")
    for what in commands:
        print(f"{what:<36} {summary(walls[what]):<44} {summary(cpus[what])}")


if __name__ == "__main__":
    main()
