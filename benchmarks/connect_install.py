"""Wall time of `dreamlake provider connect` on a `local` provider (this machine, a
real `lakeshore serve` on 127.0.0.1, tmux as the supervisor), split by how much of
the daemon's install is already in place.

    .venv/bin/python benchmarks/connect_install.py [--runs 3]

Scenarios, each run ``--runs`` times (median and min shown):

* ``cold``: an empty local build cache and a host with nothing installed;
* ``warm cache``: the local cache filled, the host still empty (a new host);
* ``reinstall``: cache and host both up to date (connect after the daemon stopped).

Each run is the CLI as a person runs it (a subprocess, stdin closed) and ends when
connect has seen the claim; the daemon is stopped between runs. Also shown: the
in-process ``install.install()`` call alone for the same three scenarios.
Everything lives under a temporary folder (its own HOME and cache) removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from dreamlake.engine.daemon import install
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.demo import patched_env, resolve_local_decisions, start_server
from dreamlake.engine.verbs.plan import plan

CACHE_ENV = "DREAMLAKE_WHEEL_CACHE"


def summary(samples: list[float]) -> str:
    return f"{statistics.median(samples):6.2f} s median, {min(samples):6.2f} s min"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("needs tmux (apt-get install -y tmux)")
    dreamlake = str(Path(sys.executable).parent / "dreamlake")
    base = Path(tempfile.mkdtemp(prefix="dl-bench-connect-"))
    name = f"bench-{uuid.uuid4().hex[:6]}"
    server = start_server(base / "lakeshore", live_seconds=1.0)
    homes: list[Path] = []
    try:
        project = base / "project"
        project.mkdir()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")},
            **server.env(),
        }
        with patched_env(server.env()):
            res = create(name, "local", cwd=project)
            tfvars = project / ".dream" / "providers" / name / "terraform" / "terraform.tfvars"
            resolve_local_decisions(tfvars, base / "work", "bench-worker")
            create(name, "local", cwd=project, continue_=True)
            plan(name, cwd=project)
            res = apply(name, yes=True, cwd=project)
            if res.status not in ("applied", "unclaimed"):
                sys.exit(f"apply did not succeed: {res.status} {res.notes}")

        def fresh(kind: str) -> Path:
            p = base / f"{kind}-{len(homes)}"
            p.mkdir()
            homes.append(p)
            return p

        def connect_once(home: Path, cache: Path) -> float:
            run_env = dict(env, HOME=str(home), **{CACHE_ENV: str(cache)})
            t = time.perf_counter()
            p = subprocess.run(
                [dreamlake, "provider", "connect", "-n", name, "--json"],
                cwd=project,
                env=run_env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                check=False,
                timeout=600,
            )
            took = time.perf_counter() - t
            if '"status": "connected"' not in p.stdout and '"status":"connected"' not in p.stdout:
                sys.exit(f"connect did not reach connected:\n{p.stdout}\n{p.stderr}")
            supervise.stop(LocalShell(env={"HOME": str(home)}), name)
            time.sleep(2.5)  # tmux's SIGHUP: no goodbye; the claim ages out (1 s live)
            return took

        def install_once(home: Path, cache: Path) -> float:
            cfg = install.DaemonConfig(name, server.url, "default", "t", ("default",))
            with patched_env({CACHE_ENV: str(cache)}):
                t = time.perf_counter()
                install.install(LocalShell(env={"HOME": str(home)}), cfg)
                return time.perf_counter() - t

        for label, fn in (
            ("dreamlake provider connect", connect_once),
            ("install()", install_once),
        ):
            results: dict[str, list[float]] = {"cold": [], "warm cache": [], "reinstall": []}
            for _ in range(args.runs):
                cache = fresh("cache")
                results["cold"].append(fn(fresh("home"), cache))
                home = fresh("home")
                results["warm cache"].append(fn(home, cache))
                results["reinstall"].append(fn(home, cache))
            print(f"{label}:")
            for scenario, samples in results.items():
                print(f"  {scenario:<11} {summary(samples)}")
    finally:
        with contextlib.suppress(Exception):
            supervise.stop(LocalShell(), name)
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
