"""An unauthenticated flood against a real ``lakeshore serve`` on 127.0.0.1.

C connections at once (default 200) each send ``POST`` with a 1 MiB JSON body (an
integer array, the body that used to be parsed before authentication) and no
token, over and over, for D seconds (default 30). Meanwhile:

* a probe asks ``/healthz`` (and ``/readyz``) back to back: p50 / p99 / max, on the
  main port and on the probe listener's (``--probe-port``, off the event loop);
* the server's CPU time over the flood (``server_cpu_seconds``, from /proc);
* N daemons (default 20, each with its own daemon token) register and heartbeat
  every ``--heartbeat`` seconds through the daemon's own client, and a watcher
  reads the provider's claims: whether any live daemon was ever counted gone.

    python benchmarks/flood.py                    # its own server (SQLite), 200 x 1 MiB, 30 s
    python benchmarks/flood.py -d 10 -c 200       # shorter
    python benchmarks/flood.py --db postgresql://…
    python benchmarks/flood.py --token bogus      # a made-up token (or: daemon, a 403)

Not a test: numbers depend on the machine (and the flooding client runs on it
too). Talks only to the server it starts on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heartbeats import free_port, start_server
from orphans import die_with_parent

BODY_BYTES = 1024 * 1024


def _body() -> bytes:
    # "[1,1,1,...]" of 1 MiB: half a million integers to parse, for nobody
    n = (BODY_BYTES - 2) // 2
    return b"[" + b",".join([b"1"] * n) + b"]"


async def _flood_one(
    port: int, path: str, body: bytes, stop: float, counts: dict[str, int], auth: str
) -> None:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"{auth}Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    while time.monotonic() < stop:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            counts["connect_error"] = counts.get("connect_error", 0) + 1
            await asyncio.sleep(0.05)
            continue
        try:
            writer.write(head)
            writer.write(body)
            # refused before the body was read: the server may close on us mid-body
            with contextlib.suppress(ConnectionError, TimeoutError):
                await asyncio.wait_for(writer.drain(), 30)
            try:
                line = await asyncio.wait_for(reader.readline(), 30)
            except (ConnectionError, TimeoutError):
                line = b""
            status = line.split(b" ")[1].decode() if line.count(b" ") >= 2 else "none"
            counts[status] = counts.get(status, 0) + 1
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()


async def _flood(
    port: int, ns: str, conns: int, seconds: float, token: str | None
) -> dict[str, int]:
    body = _body()
    counts: dict[str, int] = {}
    stop = time.monotonic() + seconds
    path = f"/api/namespaces/{ns}/secrets"
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    await asyncio.gather(*(_flood_one(port, path, body, stop, counts, auth) for _ in range(conns)))
    return counts


def _flood_process(port: int, conns: int, seconds: float, token: str | None, queue: Any) -> None:
    die_with_parent()
    queue.put(asyncio.run(_flood(port, "default", conns, seconds, token)))


def flood(
    port: int, conns: int, seconds: float, processes: int, token: str | None = None
) -> dict[str, int]:
    """The flood from ``processes`` processes of its own (the probes in this one
    measure the server, not this process's own contention)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    share = [conns // processes + (1 if i < conns % processes else 0) for i in range(processes)]
    procs = [
        ctx.Process(target=_flood_process, args=(port, n, seconds, token, queue)) for n in share
    ]
    for p in procs:
        p.start()
    total: dict[str, int] = {}
    for _ in procs:
        for k, v in queue.get(timeout=seconds + 120).items():
            total[k] = total.get(k, 0) + v
    for p in procs:
        p.join(timeout=30)
    return total


def _cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user + system), from /proc (0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _probe(url: str, path: str, stop: threading.Event, out: list[float], errors: list[str]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(url + path, timeout=60) as r:
                r.read()
            out.append((time.perf_counter() - started) * 1000)
        except OSError as exc:
            errors.append(type(exc).__name__)
        stop.wait(0.05)


def _daemons(
    url: str, admin: str, n: int, beat: float, stop: threading.Event, errors: list[str]
) -> list[threading.Thread]:
    from dreamlake.controlplane.client import Client

    boss = Client(url, admin, namespace="default")
    threads = []
    for i in range(n):
        token = boss.create_token(
            "default", label=f"flood {i}", scope="daemon", provider="flooded", host=f"h{i}"
        )
        client = Client(url, token, namespace="default", timeout=60)
        wid = client.register("flooded", f"flood-{i}", queues=["q"])["workerId"]

        def run(client: Any = client, wid: str = wid) -> None:
            while not stop.wait(beat):
                try:
                    client.heartbeat(wid)
                except Exception as exc:
                    errors.append(type(exc).__name__)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        threads.append(t)
    return threads


def _watch(
    url: str, admin: str, n: int, stop: threading.Event, lows: list[int], gone: list[int]
) -> None:
    from dreamlake.controlplane.client import Client

    boss = Client(url, admin, namespace="default", timeout=60)
    while not stop.wait(0.5):
        try:
            c = boss.claims("flooded")
        except Exception:
            continue
        lows.append(int(c["live"]))
        gone.append(int(c["gone"]))


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def _summary(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "p50": round(statistics.median(values), 1) if values else None,
        "p99": round(_pct(values, 0.99), 1),
        "max": round(max(values), 1) if values else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-c", "--connections", type=int, default=200)
    ap.add_argument("-d", "--seconds", type=float, default=30.0)
    ap.add_argument("-n", "--daemons", type=int, default=20)
    ap.add_argument("--heartbeat", type=float, default=2.0)
    ap.add_argument("--live-seconds", type=float, default=6.0)
    ap.add_argument("--db", default=None)
    ap.add_argument("--processes", type=int, default=2, help="flooding processes")
    ap.add_argument(
        "--token",
        choices=("none", "bogus", "daemon"),
        default="none",
        help="what the flood sends: no token, a made-up one, or a daemon's (403)",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    probe_port = free_port()
    proc, url, data = start_server(args.db, args.live_seconds, ["--probe-port", str(probe_port)])
    try:
        admin = (data / "admin.token").read_text().strip()
        port = int(url.rsplit(":", 1)[1])
        probe_url = f"http://127.0.0.1:{probe_port}"
        stop = threading.Event()
        health: list[float] = []
        ready: list[float] = []
        side_health: list[float] = []
        side_ready: list[float] = []
        probe_errors: list[str] = []
        beat_errors: list[str] = []
        lows: list[int] = []
        gone: list[int] = []
        _daemons(url, admin, args.daemons, args.heartbeat, stop, beat_errors)
        time.sleep(args.heartbeat)
        threads = [
            threading.Thread(target=_probe, args=(url, "/healthz", stop, health, probe_errors)),
            threading.Thread(target=_probe, args=(url, "/readyz", stop, ready, probe_errors)),
            threading.Thread(
                target=_probe, args=(probe_url, "/healthz", stop, side_health, probe_errors)
            ),
            threading.Thread(
                target=_probe, args=(probe_url, "/readyz", stop, side_ready, probe_errors)
            ),
            threading.Thread(target=_watch, args=(url, admin, args.daemons, stop, lows, gone)),
        ]
        for t in threads:
            t.daemon = True
            t.start()
        started = time.monotonic()
        token = {"none": None, "bogus": "lks_made-up-token"}.get(args.token)
        if args.token == "daemon":  # a real daemon token, on a route it may not call
            from dreamlake.controlplane.client import Client

            token = Client(url, admin).create_token(
                "default", label="flood", scope="daemon", provider="flooded", host="flood"
            )
        cpu_before = _cpu_seconds(proc.pid)
        counts = flood(port, args.connections, args.seconds, args.processes, token)
        wall = time.monotonic() - started
        server_cpu = _cpu_seconds(proc.pid) - cpu_before
        stop.set()
        for t in threads:
            t.join(timeout=70)
        out = {
            "connections": args.connections,
            "flood_processes": args.processes,
            "flood_token": args.token,
            "seconds": round(wall, 1),
            "body_bytes": BODY_BYTES,
            "flood_responses": counts,
            "server_cpu_seconds": round(server_cpu, 2),  # the flood's, the probes', the daemons'
            "healthz_ms": _summary(health),
            "readyz_ms": _summary(ready),
            "probe_port_healthz_ms": _summary(side_health),
            "probe_port_readyz_ms": _summary(side_ready),
            "probe_errors": len(probe_errors),
            "daemons": args.daemons,
            "live_seconds": args.live_seconds,
            "heartbeat_errors": len(beat_errors),
            "claims_reads": len(lows),
            "fewest_live": min(lows) if lows else None,
            "most_gone": max(gone) if gone else None,
            "daemon_counted_gone": bool(lows) and min(lows) < args.daemons,
            "load_average": os.getloadavg(),
        }
        print(json.dumps(out, indent=None if args.json else 2))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except Exception:
            proc.kill()


if __name__ == "__main__":
    main()
