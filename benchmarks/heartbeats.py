"""Heartbeat throughput of lakeshore: N simulated daemons, one process.

Registers N workers (provider ``bench``), then C threads send their heartbeats
back to back over keep-alive connections for D seconds, and prints requests/s
with p50 / p99 / max latency.

    python benchmarks/heartbeats.py                      # starts its own server (SQLite)
    python benchmarks/heartbeats.py --db postgresql://…  # its own server over PostgreSQL
    python benchmarks/heartbeats.py --server URL --token-file F [--namespace NS]

Not a test: numbers depend on the machine. Talks only to the given server (default:
a server it starts on 127.0.0.1 with a temporary data directory).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from orphans import die_with_parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    db: str | None, live_seconds: float, extra: Sequence[str] = ()
) -> tuple[subprocess.Popen[bytes], str, Path]:
    data = Path(tempfile.mkdtemp(prefix="lakeshore-bench-"))
    port = free_port()
    exe = Path(sys.executable).parent / "lakeshore"
    argv = [str(exe)] if exe.exists() else [sys.executable, "-m", "dreamlake.cli.lakeshore.app"]
    argv += [
        "serve",
        "--port",
        str(port),
        "--data-dir",
        str(data),
        "--live-seconds",
        str(live_seconds),
    ]
    if db:
        argv += ["--db", db]
    argv += extra
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
    with open(data / "server.log", "wb") as log:  # the child keeps its own copy
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
            preexec_fn=die_with_parent,
        )
    url = f"http://127.0.0.1:{port}"
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit(f"lakeshore exited: {(data / 'server.log').read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return proc, url, data
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("lakeshore did not start within 60 s")


class Conn:
    """One keep-alive HTTP/1.1 connection with a bearer token."""

    def __init__(self, url: str, token: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)

    def call(self, method: str, path: str, body: object | None = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=data, headers=self.headers)
                resp = self.conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                if attempt:
                    raise
        raise AssertionError("unreachable")


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--server", help="An existing server (default: start one).")
    p.add_argument("--token-file", type=Path, help="Token for --server.")
    p.add_argument("--namespace", default="default")
    p.add_argument("--db", help="Database URL for the server this script starts.")
    p.add_argument("-n", "--daemons", type=int, default=200)
    p.add_argument("-c", "--concurrency", type=int, default=8)
    p.add_argument("-d", "--duration", type=float, default=10.0)
    args = p.parse_args()

    proc = None
    if args.server:
        if not args.token_file:
            p.error("--server needs --token-file")
        url, token = args.server.rstrip("/"), args.token_file.read_text().strip()
    else:
        proc, url, data = start_server(args.db, live_seconds=30)
        token = (data / "admin.token").read_text().strip()
    ns = urllib.parse.quote(args.namespace, safe="")
    try:
        setup = Conn(url, token)
        ids: list[str] = []
        for i in range(args.daemons):
            status, body = setup.call(
                "POST",
                f"/api/namespaces/{ns}/workers",
                {
                    "providerName": "bench",
                    "instanceId": f"sim-{i}",
                    "host": "bench",
                    "queues": ["cpu"],
                },
            )
            if status not in (200, 201):
                sys.exit(f"register failed: {status} {body[:300]!r}")
            ids.append(json.loads(body)["workerId"])

        latencies: list[list[float]] = [[] for _ in range(args.concurrency)]
        errors = [0] * args.concurrency
        stop_at = time.monotonic() + args.duration

        def drive(k: int) -> None:
            conn = Conn(url, token)
            mine = ids[k :: args.concurrency] or ids
            i = 0
            while time.monotonic() < stop_at:
                wid = mine[i % len(mine)]
                i += 1
                t0 = time.perf_counter()
                try:
                    status, _ = conn.call(
                        "POST", f"/api/namespaces/{ns}/workers/{wid}/heartbeat", {}
                    )
                except OSError:
                    status = 0
                latencies[k].append(time.perf_counter() - t0)
                if status != 200:
                    errors[k] += 1

        threads = [threading.Thread(target=drive, args=(k,)) for k in range(args.concurrency)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        flat = sorted(x for lat in latencies for x in lat)
        if not flat:
            sys.exit("no requests completed")

        def pct(q: float) -> float:
            return flat[min(len(flat) - 1, int(q * len(flat)))] * 1000

        status, body = setup.call("GET", f"/api/namespaces/{ns}/providers/bench/claims")
        live = json.loads(body)["live"] if status == 200 else "?"
        print(f"server       {url} ({'own' if proc else 'given'})")
        print(f"daemons      {args.daemons} (live after run: {live})")
        print(f"concurrency  {args.concurrency} connections, {elapsed:.1f} s")
        print(f"requests     {len(flat)} ({sum(errors)} errors)")
        print(f"throughput   {len(flat) / elapsed:.0f} heartbeats/s")
        print(
            f"latency      p50 {pct(0.50):.1f} ms   p99 {pct(0.99):.1f} ms   "
            f"max {flat[-1] * 1000:.1f} ms   mean {statistics.fmean(flat) * 1000:.1f} ms"
        )
        return 0 if not sum(errors) else 1
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    sys.exit(main())
