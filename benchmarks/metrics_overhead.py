"""What ``GET /metrics`` costs a heartbeat: a fleet of N daemons (default 10,000)
registered on a ``lakeshore serve`` and heartbeating at their real rate (one every
``--interval`` seconds each, paced, over C keep-alive connections), in alternating
phases without and with a Prometheus scraper asking ``/metrics`` every
``--scrape-every`` seconds, in the same run on the same server. Prints the heartbeat
p50 / p99 of each condition, the difference, and the scrapes' own time and size.

    .venv/bin/python benchmarks/metrics_overhead.py                  # 10,000 daemons, SQLite
    .venv/bin/python benchmarks/metrics_overhead.py -n 2000 --phases 4 --phase-seconds 10
    .venv/bin/python benchmarks/metrics_overhead.py --db postgresql://…
    .venv/bin/python benchmarks/metrics_overhead.py --json results/metrics_overhead.json

Not a test: numbers depend on the machine. Talks only to the server it starts on
127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heartbeats import Conn, start_server


def register(url: str, token: str, ns: str, n: int, providers: int, threads: int = 8) -> list[str]:
    ids: list[str | None] = [None] * n

    def one(k: int) -> None:
        conn = Conn(url, token)
        for i in range(k, n, threads):
            status, body = conn.call(
                "POST",
                f"/api/namespaces/{ns}/workers",
                {
                    "providerName": f"bench-{i % providers}",
                    "instanceId": f"sim-{i}",
                    "host": f"h{i}",
                    "queues": ["cpu"],
                },
            )
            if status not in (200, 201):
                raise SystemExit(f"register failed: {status} {body[:300]!r}")
            ids[i] = json.loads(body)["workerId"]

    workers = [threading.Thread(target=one, args=(k,)) for k in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return [i for i in ids if i]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("-n", "--daemons", type=int, default=10_000)
    p.add_argument("--providers", type=int, default=50, help="providers the daemons claim")
    p.add_argument("--interval", type=float, default=10.0, help="each daemon's heartbeat period")
    p.add_argument("-c", "--connections", type=int, default=16)
    p.add_argument("--scrape-every", type=float, default=1.0, help="Prometheus' default is 15")
    p.add_argument("--phases", type=int, default=6, help="alternating off/on, starting off")
    p.add_argument("--phase-seconds", type=float, default=20.0)
    p.add_argument("--db", help="database URL for the server (default: SQLite)")
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()

    proc, url, data = start_server(args.db, live_seconds=3 * args.interval)
    token = (data / "admin.token").read_text().strip()
    ns = urllib.parse.quote("default", safe="")
    try:
        t0 = time.monotonic()
        ids = register(url, token, ns, args.daemons, args.providers)
        print(
            f"registered   {len(ids)} daemons on {args.providers} providers "
            f"in {time.monotonic() - t0:.1f} s"
        )
        rate = len(ids) / args.interval  # heartbeats per second, the fleet's real rate
        phase: dict[str, Any] = {"name": "warm-up"}
        samples: dict[str, list[float]] = {"off": [], "on": [], "warm-up": []}
        errors = {"off": 0, "on": 0, "warm-up": 0}
        scrapes: list[tuple[float, int]] = []
        stop = threading.Event()
        lock = threading.Lock()

        def beat(k: int) -> None:
            conn = Conn(url, token)
            mine = ids[k :: args.connections]
            gap = args.connections / rate  # this connection's share of the rate
            due = time.monotonic() + k * gap / args.connections
            i = 0
            while not stop.is_set():
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                due += gap
                name = phase["name"]
                wid = mine[i % len(mine)]
                i += 1
                started = time.perf_counter()
                try:
                    status, _ = conn.call(
                        "POST", f"/api/namespaces/{ns}/workers/{wid}/heartbeat", {}
                    )
                except OSError:
                    status = 0
                took = time.perf_counter() - started
                with lock:
                    samples[name].append(took)
                    if status != 200:
                        errors[name] += 1

        def scrape() -> None:
            conn = Conn(url, token)
            while not stop.is_set():
                if phase["name"] == "on":
                    started = time.perf_counter()
                    status, body = conn.call("GET", "/metrics")
                    if status == 200:
                        scrapes.append((time.perf_counter() - started, len(body)))
                stop.wait(args.scrape_every)

        threads = [
            threading.Thread(target=beat, args=(k,), daemon=True) for k in range(args.connections)
        ]
        threads.append(threading.Thread(target=scrape, daemon=True))
        for t in threads:
            t.start()
        time.sleep(min(10.0, args.phase_seconds))  # connections open, caches warm
        for n in range(args.phases):
            phase["name"] = ("off", "on")[n % 2]
            time.sleep(args.phase_seconds)
        stop.set()
        for t in threads:
            t.join(5)

        out: dict[str, Any] = {
            "daemons": len(ids),
            "providers": args.providers,
            "heartbeatsPerSecond": rate,
            "scrapeEverySeconds": args.scrape_every,
            "phases": args.phases,
            "phaseSeconds": args.phase_seconds,
            "database": args.db.split(":", 1)[0] if args.db else "sqlite",
        }
        for name in ("off", "on"):
            xs = samples[name]
            out[name] = {
                "heartbeats": len(xs),
                "errors": errors[name],
                "p50Ms": round(pct(xs, 0.50), 3),
                "p99Ms": round(pct(xs, 0.99), 3),
                "maxMs": round(max(xs) * 1000, 3) if xs else None,
            }
        out["p99AddedMs"] = round(out["on"]["p99Ms"] - out["off"]["p99Ms"], 3)
        times = [s for s, _ in scrapes]
        out["scrapes"] = {
            "count": len(scrapes),
            "p50Ms": round(pct(times, 0.5), 1),
            "p99Ms": round(pct(times, 0.99), 1),
            "bytes": scrapes[-1][1] if scrapes else 0,
        }
        for name in ("off", "on"):
            r = out[name]
            print(
                f"scraping {name:<3}  {r['heartbeats']} heartbeats ({r['errors']} errors)   "
                f"p50 {r['p50Ms']:.2f} ms   p99 {r['p99Ms']:.2f} ms   max {r['maxMs']} ms"
            )
        print(f"p99 added    {out['p99AddedMs']:+.2f} ms")
        s = out["scrapes"]
        print(
            f"scrapes      {s['count']}: p50 {s['p50Ms']} ms, p99 {s['p99Ms']} ms, "
            f"{s['bytes']} bytes"
        )
        if args.json:
            args.json.write_text(json.dumps(out, indent=2) + "\n")
        return 0
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    raise SystemExit(main())
