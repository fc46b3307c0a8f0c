"""A fleet against lakeshore: N simulated daemons, bursts, and two replicas.

    python benchmarks/fleet.py fleet  [-n 10000] [-d 60] [--db URL | --pg-temp] [--replicas 1|2]
    python benchmarks/fleet.py burst  [-b 1000] [--db URL | --pg-temp]

``fleet``: N daemons over P providers register, then for D seconds each heartbeats
every 10 s (phases spread evenly) and keeps a 20 s work long-poll open (one
keep-alive connection per daemon for its poll; heartbeats share a pool of
keep-alive connections). Meanwhile it reads one provider's claims five times a
second and, with two replicas, submits work on replica A for daemons polling on replica B
and times submit → the poll's answer. Prints heartbeat p50/p99/max, errors, claims
latency, pickup latency, and each server's CPU (share of one core) and RSS.

``burst``: B concurrent requests of each kind (register, heartbeat, claims, list)
fired at once on fresh connections; prints the status counts, the burst's wall time,
and a /healthz probe's latency taken during the burst.

The load client is an asyncio HTTP/1.1 client in its own process (not the server's):
the server runs as ``lakeshore serve`` subprocess(es) on 127.0.0.1. Bounded: N, B
and D cap everything; all traffic goes to 127.0.0.1. ``--pg-temp`` starts a
throwaway PostgreSQL (initdb/pg_ctl on PATH; as root it runs them as the
``dreamlake-pg`` system user the tests also use) and removes it afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing as mp
import os
import pwd
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from orphans import die_with_parent

PROVIDERS = 1000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- servers ------------------------------------------------------------------------


def start_server(
    db: str | None, data: Path, env_extra: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    exe = Path(sys.executable).parent / "lakeshore"
    argv = [str(exe), "serve", "--port", str(port), "--data-dir", str(data), "--live-seconds", "30"]
    if db:
        argv += ["--db", db]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
    env.update(env_extra or {})
    data.mkdir(parents=True, exist_ok=True)
    with open(data / "server.log", "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            preexec_fn=die_with_parent,
        )
    import urllib.request

    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return proc, port
        except OSError:
            if proc.poll() is not None:
                raise SystemExit((data / "server.log").read_text()[-2000:]) from None
            time.sleep(0.2)
    raise SystemExit("server did not start")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class TempPostgres:
    """A throwaway cluster on a free port, for ``--pg-temp``."""

    USER = "dreamlake-pg"

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="lakeshore-bench-pg-"))
        self.port = free_port()
        self.runas: list[str] = []

    def _bin(self, name: str) -> str:
        found = shutil.which(name)
        if found:
            return found
        for d in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
            if (d / name).exists():
                return str(d / name)
        raise SystemExit(f"--pg-temp needs {name} (Debian: apt-get install postgresql)")

    def start(self) -> str:
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam(self.USER)
            except KeyError:
                subprocess.run(
                    ["useradd", "-r", "-M", "-s", "/usr/sbin/nologin", self.USER], check=True
                )
                pw = pwd.getpwnam(self.USER)
            os.chown(self.base, pw.pw_uid, pw.pw_gid)
            self.runas = ["runuser", "-u", self.USER, "--"]
        data = self.base / "data"
        subprocess.run(
            [*self.runas, self._bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-N"],
            check=True, capture_output=True,
        )  # fmt: skip
        opts = f"-p {self.port} -h 127.0.0.1 -k {self.base} -F -c max_connections=300"
        subprocess.run(
            [*self.runas, self._bin("pg_ctl"), "-D", str(data), "-l", str(self.base / "log"),
             "-w", "-o", opts, "start"],
            check=True, capture_output=True,
        )  # fmt: skip
        subprocess.run(
            [*self.runas, self._bin("createdb") if shutil.which("createdb") else "createdb",
             "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "bench"],
            check=True, capture_output=True,
        )  # fmt: skip
        return f"postgresql://postgres@127.0.0.1:{self.port}/bench"

    def stop(self) -> None:
        subprocess.run(
            [*self.runas, self._bin("pg_ctl"), "-D", str(self.base / "data"), "-m", "immediate", "stop"],
            capture_output=True,
        )  # fmt: skip
        shutil.rmtree(self.base, ignore_errors=True)


# -- the asyncio HTTP client (runs in the load process) -----------------------------


class Conn:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.server_ms = float("nan")  # the last answer's Server-Timing app;dur

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        for attempt in (0, 1):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            data = json.dumps(body).encode() if body is not None else b""
            head = (
                f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {self.token}\r\nContent-Length: {len(data)}\r\n"
                + ("Content-Type: application/json\r\n" if body is not None else "")
                + "\r\n"
            ).encode()
            try:
                self.writer.write(head + data)
                await self.writer.drain()
                assert self.reader is not None
                status_line = await self.reader.readline()
                if not status_line:
                    raise ConnectionError("closed")
                status = int(status_line.split()[1])
                length = 0
                close = False
                while True:
                    line = await self.reader.readline()
                    if line in (b"\r\n", b""):
                        break
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value.strip())
                    elif name.lower() == "connection" and "close" in value.lower():
                        close = True
                    elif name.lower() == "server-timing" and "dur=" in value:
                        self.server_ms = float(value.split("dur=", 1)[1].split(";")[0])
                payload = await self.reader.readexactly(length) if length else b""
                if close:
                    self.close()
                return status, payload
            except (ConnectionError, asyncio.IncompleteReadError, OSError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def fleet_load(cfg: dict[str, Any]) -> dict[str, Any]:
    ports: list[int] = cfg["ports"]
    token: str = cfg["token"]
    n: int = cfg["daemons"]
    duration: float = cfg["duration"]
    hb_every, poll_wait = 10.0, 20.0
    out: dict[str, Any] = {"errors": 0, "error_kinds": {}}

    def err(kind: str) -> None:
        out["errors"] += 1
        out["error_kinds"][kind] = out["error_kinds"].get(kind, 0) + 1

    # register every daemon (200 at a time), each on its replica
    workers: list[tuple[int, str, str]] = []  # (port, worker id, provider)
    reg_lat: list[float] = []
    reg_free: dict[int, asyncio.Queue[Conn]] = {p: asyncio.Queue() for p in ports}
    for p in ports:
        for _ in range(200 // len(ports)):
            reg_free[p].put_nowait(Conn(p, token))

    async def register(i: int) -> None:
        port = ports[i % len(ports)]  # daemon i lives on replica i mod R
        conn = await reg_free[port].get()
        try:
            provider = f"p{i % PROVIDERS}"
            t = time.perf_counter()
            st, body = await conn.request(
                "POST",
                "/api/namespaces/default/workers",
                {"providerName": provider, "instanceId": f"d{i}"},
            )
            reg_lat.append(time.perf_counter() - t)
        finally:
            reg_free[port].put_nowait(conn)
        if st >= 300:
            err(f"register {st}")
            return
        workers.append((port, json.loads(body)["workerId"], provider))

    t0 = time.perf_counter()
    await asyncio.gather(*(register(i) for i in range(n)))
    out["register_s"] = time.perf_counter() - t0
    out["register_p99_ms"] = pct(reg_lat, 0.99) * 1000

    start = time.monotonic()
    stop_at = start + duration
    hb_lat: list[float] = []
    hb_at: list[float] = []  # when each heartbeat finished, for the per-window figures
    hb_conns = {p: [Conn(p, token) for _ in range(100)] for p in ports}
    hb_free: dict[int, asyncio.Queue[Conn]] = {p: asyncio.Queue() for p in ports}
    for p in ports:
        for c in hb_conns[p]:
            hb_free[p].put_nowait(c)
    picked: dict[str, float] = {}

    async def daemon(idx: int, port: int, wid: str) -> None:
        phase = (idx / max(1, len(workers))) * hb_every
        poll = Conn(port, token)

        async def beats() -> None:
            await asyncio.sleep(phase)
            while time.monotonic() < stop_at:
                conn = await hb_free[port].get()
                t = time.perf_counter()
                try:
                    st, _ = await conn.request(
                        "POST", f"/api/namespaces/default/workers/{wid}/heartbeat"
                    )
                    if st != 200:
                        err(f"heartbeat {st}")
                except Exception as exc:
                    err(f"heartbeat {type(exc).__name__}")
                finally:
                    hb_free[port].put_nowait(conn)
                hb_lat.append(time.perf_counter() - t)
                hb_at.append(time.monotonic())
                await asyncio.sleep(hb_every)

        async def polls() -> None:
            await asyncio.sleep(phase * 2)
            while time.monotonic() < stop_at:
                try:
                    st, body = await poll.request(
                        "GET", f"/api/namespaces/default/workers/{wid}/work?wait={poll_wait:g}"
                    )
                except Exception as exc:
                    err(f"poll {type(exc).__name__}")
                    await asyncio.sleep(1)
                    continue
                if st == 200:
                    item = json.loads(body)
                    picked[item["id"]] = time.perf_counter()
                    await poll.request(
                        "POST",
                        f"/api/namespaces/default/workers/{wid}/work/{item['id']}/result",
                        {"exitCode": 0, "outputTail": ""},
                    )
                elif st != 204:
                    err(f"poll {st}")
            poll.close()

        await asyncio.gather(beats(), polls())

    claims_lat: list[float] = []
    claims_server: list[float] = []
    pickup: list[float] = []

    settle = min(25.0, duration / 3)  # every poll is open by then

    async def reader() -> None:
        """An agent's status loop: one provider's claims, five times a second."""
        conn = Conn(ports[0], token)
        await asyncio.sleep(settle)
        while time.monotonic() < stop_at - 3:
            t = time.perf_counter()
            st, _ = await conn.request("GET", "/api/namespaces/default/providers/p1/claims")
            claims_lat.append(time.perf_counter() - t)
            claims_server.append(conn.server_ms / 1000)
            if st != 200:
                err(f"claims {st}")
            await asyncio.sleep(0.2)

    async def submitter() -> None:
        """Work submitted on replica A for daemons long-polling on replica B."""
        submit = Conn(ports[0], token)
        await asyncio.sleep(settle)
        k = 0
        while len(ports) > 1 and time.monotonic() < stop_at - 3:
            # a provider whose daemons all poll on replica B (odd index → ports[1])
            provider = f"p{(2 * k + 1) % PROVIDERS}"
            t = time.perf_counter()
            st, body = await submit.request(
                "POST", f"/api/namespaces/default/providers/{provider}/work", {"command": "true"}
            )
            if st == 201:
                wid = json.loads(body)["id"]
                for _ in range(100):
                    if wid in picked:
                        pickup.append(picked[wid] - t)
                        break
                    await asyncio.sleep(0.02)
                else:
                    err("pickup > 2 s")
            else:
                err(f"submit {st}")
            k += 1
            await asyncio.sleep(1.0)

    await asyncio.gather(
        reader(), submitter(), *(daemon(i, p, w) for i, (p, w, _) in enumerate(workers))
    )
    out.update(
        daemons=len(workers),
        heartbeats=len(hb_lat),
        hb_rate=len(hb_lat) / duration,
        hb_p50_ms=pct(hb_lat, 0.5) * 1000,
        hb_p99_ms=pct(hb_lat, 0.99) * 1000,
        hb_max_ms=max(hb_lat, default=float("nan")) * 1000,
        hb_p99_ms_per_10s=[
            round(
                pct(
                    [v for v, a in zip(hb_lat, hb_at, strict=True) if w <= a - start < w + 10], 0.99
                )
                * 1000,
                1,
            )
            for w in range(0, int(duration), 10)
        ],
        # the seconds (since the load began) in which a heartbeat took over 50 ms, and how many
        hb_slow_seconds={
            str(sec): n
            for sec, n in sorted(
                __import__("collections")
                .Counter(int(a - start) for v, a in zip(hb_lat, hb_at, strict=True) if v > 0.05)
                .items()
            )
        },
        claims_n=len(claims_lat),
        claims_p50_ms=pct(claims_lat, 0.5) * 1000,
        claims_p99_ms=pct(claims_lat, 0.99) * 1000,
        claims_server_p50_ms=pct(claims_server, 0.5) * 1000,
        claims_server_p99_ms=pct(claims_server, 0.99) * 1000,
        pickups=len(pickup),
        pickup_p50_ms=pct(pickup, 0.5) * 1000,
        pickup_max_ms=max(pickup, default=float("nan")) * 1000,
    )
    return out


async def burst_load(cfg: dict[str, Any]) -> dict[str, Any]:
    port, token, b = cfg["ports"][0], cfg["token"], cfg["burst"]
    results: dict[str, Any] = {}
    # workers for the heartbeat burst
    conn = Conn(port, token)
    wids = []
    for i in range(min(b, 50)):
        _st, body = await conn.request(
            "POST", "/api/namespaces/default/workers", {"providerName": "hb", "instanceId": f"h{i}"}
        )
        wids.append(json.loads(body)["workerId"])
    kinds = {
        "register": lambda i: (
            "POST",
            "/api/namespaces/default/workers",
            {"providerName": f"b{i % 50}", "instanceId": f"r{i}"},
        ),
        "heartbeat": lambda i: (
            "POST",
            f"/api/namespaces/default/workers/{wids[i % len(wids)]}/heartbeat",
            None,
        ),
        "claims": lambda i: ("GET", f"/api/namespaces/default/providers/b{i % 50}/claims", None),
        "list": lambda i: ("GET", "/api/namespaces/default/providers", None),
    }
    for kind, make in kinds.items():
        statuses: dict[str, int] = {}
        health: list[float] = []

        async def one(i: int, make: Any = make, statuses: dict[str, int] = statuses) -> None:
            c = Conn(port, token)
            try:
                st, _ = await c.request(*make(i))
                key = str(st)
            except Exception as exc:
                key = type(exc).__name__
            finally:
                c.close()
            statuses[key] = statuses.get(key, 0) + 1

        async def probe(health: list[float] = health) -> None:
            await asyncio.sleep(0.05)
            c = Conn(port, token)
            t = time.perf_counter()
            await c.request("GET", "/healthz")
            health.append(time.perf_counter() - t)
            c.close()

        t = time.perf_counter()
        await asyncio.gather(probe(), *(one(i) for i in range(b)))
        results[kind] = {
            "statuses": statuses,
            "wall_s": round(time.perf_counter() - t, 2),
            "healthz_during_ms": round(health[0] * 1000, 1),
        }
    return results


def load_process(mode: str, cfg: dict[str, Any], q: Any) -> None:
    die_with_parent()  # a benchmark killed with SIGKILL leaves no load behind
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    fn = fleet_load if mode == "fleet" else burst_load
    try:  # the load generator must not be the bottleneck: libuv's loop when installed
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    except ImportError:
        pass
    # 20,000 tasks make Python's cycle collector pause this process for up to 0.3 s
    # at a time (found by nothing to free), which would be counted as server latency
    gc.disable()
    started = time.process_time()
    out = asyncio.run(fn(cfg))
    out["load_process_cpu_s"] = round(time.process_time() - started, 1)
    q.put(out)


# -- main -----------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("mode", choices=["fleet", "burst"])
    ap.add_argument("-n", "--daemons", type=int, default=10_000)
    ap.add_argument("-d", "--duration", type=float, default=60.0)
    ap.add_argument("-b", "--burst", type=int, default=1000)
    ap.add_argument("--replicas", type=int, default=1, choices=[1, 2])
    ap.add_argument("--db", help="PostgreSQL URL (default: SQLite in a temp dir)")
    ap.add_argument("--pg-temp", action="store_true", help="start a throwaway PostgreSQL")
    ap.add_argument(
        "--pool-size", type=int, default=None, help="LAKESHORE_POOL_SIZE for the servers"
    )
    args = ap.parse_args()
    if args.daemons > 20_000 or args.burst > 5_000 or args.duration > 600:
        raise SystemExit("bounded: at most 20,000 daemons, 5,000-request bursts, 600 s")
    pg = TempPostgres() if args.pg_temp else None
    db = pg.start() if pg else args.db
    if args.replicas > 1 and not db:
        raise SystemExit("two replicas need PostgreSQL (--db URL or --pg-temp)")
    from cryptography.fernet import Fernet

    env = {"LAKESHORE_SECRET_KEY": Fernet.generate_key().decode()}
    if args.pool_size:
        env["LAKESHORE_POOL_SIZE"] = str(args.pool_size)
    base = Path(tempfile.mkdtemp(prefix="lakeshore-bench-"))
    servers = [start_server(db, base / f"s{i}", env) for i in range(args.replicas)]
    try:
        token = (base / "s0" / "admin.token").read_text().strip()
        cfg = {
            "ports": [p for _, p in servers],
            "token": token,
            "daemons": args.daemons,
            "duration": args.duration,
            "burst": args.burst,
        }
        cpu0 = [cpu_seconds(p.pid) for p, _ in servers]
        t0 = time.monotonic()
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        proc = ctx.Process(target=load_process, args=(args.mode, cfg, q))
        proc.start()
        peak = [0.0] * len(servers)
        result = None
        while result is None:
            try:
                result = q.get(timeout=1.0)
            except Exception:
                if not proc.is_alive():
                    raise SystemExit("the load process died") from None
                peak = [max(m, rss_mib(p.pid)) for m, (p, _) in zip(peak, servers, strict=True)]
        proc.join()
        wall = time.monotonic() - t0
        result["servers"] = [
            {
                "cpu_share_of_one_core": round((cpu_seconds(p.pid) - c0) / wall, 2),
                "peak_rss_mib": round(m, 1),
            }
            for (p, _), c0, m in zip(servers, cpu0, peak, strict=True)
        ]
        result["database"] = "postgresql" if db else "sqlite"
        result["replicas"] = args.replicas
        print(json.dumps(result, indent=2, default=lambda x: round(x, 2)))
    finally:
        for p, _ in servers:
            p.send_signal(signal.SIGTERM)
        for p, _ in servers:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        if pg:
            pg.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
