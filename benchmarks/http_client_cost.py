"""What each way of making status's one claims request costs at import, on top of
the modules status already has loaded (json, os, socket, time, urllib.parse).

Each candidate is imported in a fresh interpreter, timed in-process, ``--runs``
times; the median and the spread are printed in milliseconds. The request itself
(one loopback round trip) costs the same whichever client sends it.

    python benchmarks/http_client_cost.py [--runs 30]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

CANDIDATES = {
    "http.client with the engine's bounds (engine/settings/http_json.py)": "import dreamlake.engine.settings.http_json",
    "http.client": "import http.client",
    "urllib.request": "import urllib.request",
}

PROBE = (
    "import json, os, socket, time, urllib.parse\n"
    "t = time.perf_counter()\n"
    "{stmt}\n"
    "print(time.perf_counter() - t)\n"
)


def cost(stmt: str, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        got = subprocess.run(
            [sys.executable, "-c", PROBE.format(stmt=stmt)],
            capture_output=True,
            text=True,
            check=True,
        )
        out.append(float(got.stdout) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    print(f"{'client':<62} {'median ms':>9} {'min':>6} {'max':>6}")
    for name, stmt in CANDIDATES.items():
        ms = cost(stmt, args.runs)
        print(f"{name:<62} {statistics.median(ms):9.1f} {min(ms):6.1f} {max(ms):6.1f}")


if __name__ == "__main__":
    main()
