"""How long the dashboard's page takes for a large namespace: P providers (default
1,000, SSH pools of one host each) and N live workers (default 10,000) registered on
a ``lakeshore serve``, then ``GET /ui?ns=`` and ``GET /ui/panel?ns=`` asked R times
each, signed in with the admin token. Prints p50 / p99 / max of each (on 127.0.0.1:
the server's time plus a fraction of a millisecond of transport), the server's own
CPU time per request (from /proc: the figure to compare on a shared machine) and the
page size.

    .venv/bin/python benchmarks/dashboard.py
    .venv/bin/python benchmarks/dashboard.py --providers 200 --workers 2000 --runs 10

Not a test: numbers depend on the machine. Talks only to the server it starts on
127.0.0.1.
"""

from __future__ import annotations

import argparse
import http.client
import os
import sys
import threading
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heartbeats import Conn, start_server
from metrics_overhead import pct, register

NS = "big"


def providers(url: str, token: str, count: int, threads: int = 8) -> None:
    def one(k: int) -> None:
        conn = Conn(url, token)
        for i in range(k, count, threads):
            body = {
                "name": f"bench-{i}",
                "launcher": "SSH",
                "kwargs": {"hosts": [f"10.0.{i // 250}.{i % 250 + 1}"], "user": "ops"},
                "dispatch": "daemon",
            }
            status, out = conn.call("POST", f"/api/namespaces/{NS}/providers", body)
            if status not in (200, 201):
                raise SystemExit(f"provider {i}: {status} {out[:300]!r}")

    workers = [threading.Thread(target=one, args=(k,)) for k in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()


def server_cpu(pid: int) -> float:
    """The server process's CPU seconds so far (user and system, from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sign_in(url: str, token: str) -> str:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request(
        "POST",
        "/ui/login",
        body=urllib.parse.urlencode({"token": token}),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    resp = conn.getresponse()
    resp.read()
    cookie = resp.getheader("Set-Cookie") or ""
    if resp.status != 303 or not cookie:
        raise SystemExit(f"sign-in failed: {resp.status}")
    return cookie.split(";")[0]


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--providers", type=int, default=1000)
    p.add_argument("--workers", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--db", help="database URL for the server (default: SQLite)")
    args = p.parse_args()

    proc, url, data = start_server(args.db, live_seconds=3600)
    token = (data / "admin.token").read_text().strip()
    try:
        Conn(url, token).call("POST", "/api/namespaces", {"name": NS})
        t0 = time.monotonic()
        providers(url, token, args.providers)
        ids = register(url, token, NS, args.workers, args.providers)
        print(
            f"namespace    {args.providers} providers, {len(ids)} workers "
            f"(set up in {time.monotonic() - t0:.1f} s)"
        )
        cookie = sign_in(url, token)
        parts = urllib.parse.urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        paths = (f"/ui?ns={NS}", f"/ui/panel?ns={NS}")
        times: dict[str, list[float]] = {p: [] for p in paths}
        cpu: dict[str, float] = dict.fromkeys(paths, 0.0)
        sizes: dict[str, int] = {}
        for run in range(args.runs + 1):  # the first warms the caches: not counted
            for path in paths if run % 2 else paths[::-1]:  # taking turns
                spent = server_cpu(proc.pid)
                started = time.perf_counter()
                conn.request("GET", path, headers={"Cookie": cookie, "Accept": "text/html"})
                resp = conn.getresponse()
                body = resp.read()
                took = time.perf_counter() - started
                spent = server_cpu(proc.pid) - spent
                if resp.status != 200:
                    raise SystemExit(f"{path}: {resp.status} {body[:300]!r}")
                if run:
                    times[path].append(took)
                    cpu[path] += spent
                sizes[path] = len(body)
        for path in paths:
            xs = times[path]
            print(
                f"{path:<22} p50 {pct(xs, 0.5):.0f} ms   p99 {pct(xs, 0.99):.0f} ms   "
                f"max {max(xs) * 1000:.0f} ms   server CPU {cpu[path] / len(xs) * 1000:.0f} ms "
                f"each   {sizes[path] // 1024} KiB"
            )
        return 0
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    raise SystemExit(main())
