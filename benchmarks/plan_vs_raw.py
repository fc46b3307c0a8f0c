"""Wall time of `dreamlake provider plan --json` next to the raw terraform commands
it runs (init, validate -json, plan -json -detailed-exitcode -out=tfplan,
show -json tfplan) on the `local` vendor, offline.

    .venv/bin/python benchmarks/plan_vs_raw.py [--runs 3]

The difference is the engine's own cost: the decision scan, reading the state and
writing the saved-plan record. Every terraform binary found is measured.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.backends.terraform.tfexec import (
    init_args,
    plan_args,
    show_args,
    validate_args,
)
from dreamlake.engine.verbs.create import create

TFVARS = 'workdir = "/tmp/nymph-bench"\nqueues = ["default"]\nworker_name = "bench-1"\n'


def once(argv: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    t = time.perf_counter()
    rc = subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False
    ).returncode
    if rc not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {rc}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    dreamlake = str(Path(sys.executable).parent / "dreamlake")
    print(f"{'terraform':<10} {'step':<44} {'median s':>9}")
    for version, binary in available():
        with tempfile.TemporaryDirectory(prefix="dl-bench-") as tmp:
            proj = Path(tmp)
            env = dict(os.environ, TERRAFORM_BINARY=binary, TF_CLI_CONFIG_FILE=os.devnull)
            env.setdefault("LAKESHORE_URL", "http://127.0.0.1:9")
            raw_env = dict(env, TF_IN_AUTOMATION="1", TF_INPUT="0", CHECKPOINT_DISABLE="1")
            create("bench", "local", dream_dir=str(proj), probe=False)
            tf_dir = proj / ".dream/providers/bench/terraform"
            (tf_dir / "terraform.tfvars").write_text(TFVARS)
            steps = {
                "terraform " + " ".join(init_args()[:1]): ([binary, *init_args()], (0,)),
                "terraform validate -json": ([binary, *validate_args()], (0,)),
                "terraform plan -json -detailed-exitcode -out": ([binary, *plan_args()], (0, 2)),
                "terraform show -json tfplan": ([binary, *show_args("tfplan")], (0,)),
            }
            raw: dict[str, list[float]] = {k: [] for k in steps}
            ours: list[float] = []
            for _ in range(args.runs):
                for name, (argv, ok) in steps.items():
                    raw[name].append(once(argv, tf_dir, raw_env, ok))
                ours.append(
                    once([dreamlake, "provider", "plan", "-n", "bench", "--json"], proj, env)
                )
            total = 0.0
            for name, samples in raw.items():
                med = statistics.median(samples)
                total += med
                print(f"{version:<10} {name:<44} {med:>9.3f}")
            print(f"{version:<10} {'sum of the raw commands':<44} {total:>9.3f}")
            print(
                f"{version:<10} {'dreamlake provider plan --json':<44} {statistics.median(ours):>9.3f}"
            )


if __name__ == "__main__":
    main()
