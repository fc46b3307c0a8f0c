"""Concurrent lease requests against fewer units, on two replicas over one PostgreSQL.

    .venv/bin/python benchmarks/capacity_leases.py [--requests 1000] [--units 300]
        [--providers 3] [--concurrency 100] [--db URL | --pg-temp]

Registers ``units`` live workers over ``providers`` providers (each at its instance
limit, so nothing is launched), then sends ``requests`` lease requests at once,
alternating between the two replicas, and reports: granted, distinct workers and
slots held (each must equal ``units``), pending (each with a reason), request
latency p50/p99, and — after every granted lease is renewed to run out in 2 s and
the pending ones released — how long the reconcile loop took to end them (the
expiry lag). Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from fleet import TempPostgres, start_server

L = "/api/namespaces/default/capacity/leases"


def rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg

    conn = psycopg.connect(url)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--units", type=int, default=300)
    ap.add_argument("--providers", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--db")
    ap.add_argument("--pg-temp", action="store_true")
    args = ap.parse_args()
    if not args.db and not args.pg_temp:
        raise SystemExit("two replicas need PostgreSQL: --db URL or --pg-temp")
    from dreamlake.controlplane.client import Client

    pg = TempPostgres() if args.pg_temp else None
    url = pg.start() if pg else args.db
    procs = []
    try:
        tmp = Path(tempfile.mkdtemp(prefix="capacity-bench-"))
        env = {"LAKESHORE_SECRET_KEY": "Y2FwYWNpdHktYmVuY2gtc2hhcmVkLWtleS0wMDAwMDA=",
               "LAKESHORE_QUEUE_TICK": "1", "LAKESHORE_LIVE_SECONDS": "3600",
               "LAKESHORE_POOL_SIZE": "16"}  # fmt: skip
        servers = []
        for n in range(2):
            proc, port = start_server(url, tmp / f"s{n}", env)
            procs.append(proc)
            token = (tmp / f"s{n}" / "admin.token").read_text().strip()
            servers.append(Client(f"http://127.0.0.1:{port}", token, timeout=300))
        admin = servers[0]
        per = args.units // args.providers
        for p in range(args.providers):
            kwargs = {
                "region": "r",
                "capacity": {"limit": per, "offers": [{"name": "std", "cpus": 2}]},
            }
            admin.create_provider_row({"name": f"pool-{p}", "launcher": "EC2", "kwargs": kwargs})
            for w in range(per):
                admin.register(f"pool-{p}", f"w-{p}-{w}")
        units = per * args.providers
        times: list[float] = []

        def ask(n: int) -> dict[str, Any]:
            body = {"cpus": 1, "ttlSeconds": 3600, "strategy": ("cheapest", "spread")[n % 2]}
            t = time.perf_counter()
            out = servers[n % 2].request("POST", L, body)
            times.append((time.perf_counter() - t) * 1000)
            return out  # type: ignore[no-any-return]

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            answers = list(pool.map(ask, range(args.requests)))
        wall = time.perf_counter() - start
        at_once = sum(1 for a in answers if a["state"] == "granted")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            held = rows(url, "SELECT worker_id, slot FROM capacity_leases WHERE state = 'granted'")
            if len(held) >= units:
                break
            time.sleep(0.5)
        pending = rows(url, "SELECT reason FROM capacity_leases WHERE state = 'pending'")
        times.sort()
        print(
            f"{args.requests} requests ({args.concurrency} at a time, 2 replicas) against "
            f"{units} units: {wall:.1f}s, latency p50 {statistics.median(times):.0f} ms, "
            f"p99 {times[int(len(times) * 0.99) - 1]:.0f} ms (load {os.getloadavg()[0]:.1f})"
        )
        print(
            f"granted {len(held)} ({at_once} in the request, {len(held) - at_once} by the loop), "
            f"distinct workers {len({w for w, _ in held})}, distinct slots "
            f"{len({s for _, s in held})}, pending {len(pending)} "
            f"(with a reason: {sum(1 for (r,) in pending if r)})"
        )
        for lease_id, state in rows(url, "SELECT id, state FROM capacity_leases"):
            if state == "pending":
                admin.request("DELETE", f"{L}/{lease_id}")
            else:
                admin.request("POST", f"{L}/{lease_id}/renew", {"ttlSeconds": 2})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            left = rows(url, "SELECT count(*) FROM capacity_leases WHERE state = 'granted'")[0][0]
            if left == 0:
                break
            time.sleep(0.2)
        lag = rows(
            url,
            "SELECT max(extract(epoch FROM ended_at - expires_at)) FROM capacity_leases "
            "WHERE state = 'expired'",
        )[0][0]
        print(f"expiry: every lease ended by the loop (tick 1 s) at most {float(lag):.2f}s late")
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        if pg:
            pg.stop()


if __name__ == "__main__":
    main()
