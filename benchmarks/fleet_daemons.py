"""A fleet of real daemons: N ``nymph`` daemons — the daemon's own ``Daemon`` loops
and ``Client`` (controlplane/nymph/daemon.py, controlplane/client.py), not a model
of them — against ``lakeshore serve`` on 127.0.0.1, one connection model per run.

    python benchmarks/fleet_daemons.py [-n 10000] [-d 60] [--model keepalive|churn]
        [--pg-temp | --db URL] [--replicas 1|2] [--restart-at S] [--kill-replica-at S]
        [--tls]

Models:

* ``keepalive`` — the daemon as it is: one kept connection for its long-poll, one
  for register / heartbeats / results while it runs work (closed when idle);
  heartbeats only while busy, the held poll proves an idle daemon alive.
* ``churn`` — daemons before keep-alive: a new connection for every request
  (``Client(keep_alive=False)``, ``Connection: close``) and a heartbeat every
  interval while idle too. ``--churn-load replay`` (the default) sends those
  daemons' requests, byte for byte as their own ``Client`` writes them, from a few
  asyncio processes (``churn_replay.py``, and the test that compares them);
  ``--churn-load daemons`` runs the daemons themselves in threads, with the heartbeat
  loop those daemons ran driven from a few threads per process through each
  daemon's own client. On this machine the second measures the load processes'
  contention for its two cores as much as the server (benchmarks/README.md).

Every daemon runs in threads of a few load processes (``--procs``; each daemon has
its own connections, so the per-process open-files limit bounds a process's share),
connecting from spread loopback source addresses (127.0.0.2–127.0.0.251) as hosts
would. Each claims provider ``p<i mod 1000>``; work items (``sleep S``, run by a
runner double that waits S seconds instead of starting a shell: the runner is not
what is measured) are submitted at ``--work-rate`` per second, so some daemons are
busy and heartbeat. The client's observer times every request the daemons make.

The daemons start over ``--ramp`` seconds; once every one has registered, and one
long-poll's wait later (every poll renewed on its kept connection), the steady
window of ``-d`` seconds begins. Output (JSON): per request kind (heartbeat,
result, and register when any) p50/p99/max latency in the steady window, the long-polls' overhead
(client time less the server's ``Server-Timing``, i.e. what a poll's renewal costs
beyond its wait), errors (no answer, 5xx) and deliberate 503s, connections opened,
the servers' peak open files, CPU and RSS, workers not live at each sample, work
submitted / succeeded / run more than once / lost, and the kernel's
``TcpExtListenOverflows`` / ``TcpExtListenDrops`` before and after (these counters
are the whole machine's: other programs' overflows count too), and for a replayed
fleet ``load_loop_lag``: how late its own event loops ran what was due, which the
fleet's latencies include.

A load process holds 500 daemons' threads under one interpreter lock, so a time it
takes includes waits for that lock (up to ``LOAD_SWITCH_INTERVAL``) that a daemon,
a process of its own, never has. ``--probes K`` (default 40) daemons more run in a
process of their own with Python's usual switch interval, each on its own provider
(``probe-<k>``) and kept busy through the steady window by one long item, so they
heartbeat every 10 s on their kept connection the whole time: their figures
(``probe``) are what a daemon sees of a server carrying the fleet.

``--restart-at S`` restarts the server (SIGTERM, start again on the same port and
database) S seconds into the run and reports how long until every daemon's worker
was seen again. ``--kill-replica-at S`` (two replicas) kills replica 2 with SIGKILL
and reports how long until every daemon that was on it was seen through replica 1
(each daemon is given both URLs, its own replica first).

``--tls``: every server serves HTTPS (``--tls-cert``/``--tls-key``: a CA and a
certificate for 127.0.0.1 the benchmark makes; the client certificates are signed
by the database's own CA, as in any TLS deployment) and every daemon authenticates
with a client certificate it gets as ``nymph`` does at its first start: the
benchmark hands it a bootstrap token (what ``connect`` does), and the daemon's own
``Credentials`` makes its key (``keypair.py``, pure Python, about 40 ms of CPU) and
exchanges the token for a certificate. That enrolment is a set-up phase before the
ramp (``tls_enrolment``: its wall time, the server's CPU and the daemons'), so the
ramp and the steady window see what the daemon does afterwards: its ``Client``
over ``ssl`` and ``http.client``, its kept connections (a full handshake for each
new one: the standard library's client resumes no sessions), the certificate and
no bearer token on every request. A churned fleet over TLS runs the daemons
themselves (``--churn-load daemons``): the replay writes plain-HTTP, bearer-token
requests.

Bounded: at most 20,000 daemons and 600 s; all traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import multiprocessing as mp
import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpugroup
from fleet import TempPostgres, cpu_seconds, free_port, pct, rss_mib
from orphans import die_with_parent

PROVIDERS = 1000
POLL_WAIT = 20.0
LIVE_SECONDS = 30.0  # heartbeat every 10 s
SOURCES = [f"127.0.0.{k}" for k in range(2, 252)]
# A load process holds 500 daemons' threads under one interpreter lock; a real daemon
# is a process of its own. Python's 5 ms default makes every thread waiting for the
# lock wake every 5 ms: when a replica dies, 250 threads per process wake at once and
# the load processes' futex traffic took 99 % of both cores (perf), starving the
# servers they measure. The daemons' requests are the same either way.
LOAD_SWITCH_INTERVAL = 0.1


# -- servers --------------------------------------------------------------------------


class Server:
    def __init__(
        self,
        db: str | None,
        data: Path,
        env: dict[str, str],
        port: int = 0,
        pki: Path | None = None,
    ) -> None:
        self.db, self.data, self.env = db, data, env
        self.port = port or free_port()
        self.pki = pki  # --tls: the folder make_pki wrote (ca.crt, server.crt, server.key)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.pki else 'http'}://127.0.0.1:{self.port}"

    def start(self) -> Server:
        exe = Path(sys.executable).parent / "lakeshore"
        argv = [str(exe), "serve", "--port", str(self.port), "--data-dir", str(self.data),
                "--live-seconds", f"{LIVE_SECONDS:g}"]  # fmt: skip
        if self.db:
            argv += ["--db", self.db]
        context = None
        if self.pki is not None:
            import ssl

            argv += ["--tls-cert", str(self.pki / "server.crt"),
                     "--tls-key", str(self.pki / "server.key")]  # fmt: skip
            context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
        env.update(self.env)
        if "STALLWATCH" in env:  # --watch-stalls: where this server writes them
            env["STALLWATCH"] = str(self.data / "stalls.json")
        self.data.mkdir(parents=True, exist_ok=True)
        with open(self.data / "server.log", "ab") as log:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                preexec_fn=die_with_parent,
            )
        for _ in range(600):
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2, context=context):
                    return self
            except OSError:
                if self.proc.poll() is not None:
                    raise SystemExit((self.data / "server.log").read_text()[-2000:]) from None
                time.sleep(0.1)
        raise SystemExit("server did not start")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def open_files(self) -> int:
        assert self.proc is not None
        try:
            return len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except OSError:
            return 0


def server_cpu(pid: int) -> float:
    """CPU seconds of a server: its process, the children it has waited for (an edge
    that ended) and those still running (``lakeshore serve``'s TLS edges)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                with contextlib.suppress(OSError):
                    total += cpu_seconds(int(child))
    return total


def make_pki(folder: Path) -> Path:
    """--tls: a CA and a server certificate for 127.0.0.1 signed by it (with the
    functions the built-in CA uses), written to ``folder``."""
    from dreamlake.controlplane.server.builtin_ca import issue_server, make_ca

    folder.mkdir(parents=True, exist_ok=True)
    ca_pem, ca_key = make_ca("fleet benchmark CA")
    cert, key = issue_server(ca_pem, ca_key, ["127.0.0.1"])
    (folder / "ca.crt").write_bytes(ca_pem)
    (folder / "server.crt").write_bytes(cert)
    (folder / "server.key").write_bytes(key)
    (folder / "server.key").chmod(0o600)
    return folder


def listen_counters() -> dict[str, int]:
    """TcpExtListenOverflows / TcpExtListenDrops (the kernel's, machine-wide)."""
    out: dict[str, int] = {}
    if shutil.which("nstat"):
        text = subprocess.run(
            ["nstat", "-asz", "TcpExtListenOverflows", "TcpExtListenDrops"],
            capture_output=True, text=True, check=False,
        ).stdout  # fmt: skip
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0].startswith("TcpExt"):
                out[parts[0]] = int(parts[1])
        if out:
            return out
    lines = Path("/proc/net/netstat").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:], strict=False))
            out["TcpExtListenOverflows"] = int(table.get("ListenOverflows", 0))
            out["TcpExtListenDrops"] = int(table.get("ListenDrops", 0))
    return out


# -- the load processes -------------------------------------------------------------


class SleepRunner:
    """Runner double: ``sleep S`` waits S seconds (a stop cuts it short) instead of
    starting a shell, and counts how often each work item was run."""

    name = "sleep"

    def __init__(self) -> None:
        self.runs: dict[str, int] = {}
        self._lock = threading.Lock()

    def run(self, command: str, *, timeout: Any = None, stop: Any = None, env: Any = None) -> Any:
        from dreamlake.controlplane.nymph.runner import RunResult

        work_id = (env or {}).get("DREAMLAKE_WORK_ID", "")
        with self._lock:
            self.runs[work_id] = self.runs.get(work_id, 0) + 1
        seconds = float(command.split()[1]) if command.startswith("sleep ") else 0.0
        if stop is not None and stop.wait(seconds):
            return RunResult(None, "", "the daemon stopped before the command finished", seconds)
        if stop is None:
            time.sleep(seconds)
        return RunResult(0, "", None, seconds)


def _kind(method: str, path: str) -> str:
    path = path.split("?", 1)[0]
    if path.endswith("/heartbeat"):
        return "heartbeat"
    if path.endswith("/result"):
        return "result"
    if path.endswith("/work") and method == "GET":
        return "poll"
    if method == "POST" and path.endswith("/workers"):
        return "register"
    if method == "DELETE":
        return "deregister"
    return "other"


def enrol(
    cfg: dict[str, Any], clients: dict[int, Any], names: dict[int, tuple[str, str]]
) -> tuple[dict[int, Any], dict[str, Any]]:
    """--tls, each daemon's first start: a bootstrap token handed to it (as ``connect``
    does), then the daemon's own ``Credentials.step`` with its own client (its key made
    here, the token exchanged for a certificate). Returns each daemon's credentials
    and what it cost."""
    from dreamlake.controlplane.client import ApiFailure, Client, Unreachable
    from dreamlake.controlplane.nymph.credentials import Credentials

    admin = Client(cfg["urls"][0], cfg["token"], keep_alive=True, ca=cfg["ca"], timeout=60)
    out: dict[int, Any] = {}
    failures: dict[str, int] = {}
    started, cpu = time.monotonic(), time.process_time()
    for i, client in clients.items():
        provider, host = names[i]
        for attempt in range(20):  # a busy server's 503: the daemon's own loop retries too
            try:
                token = admin.create_token(
                    "default", scope="bootstrap", provider=provider, host=host
                )
                creds = Credentials(
                    Path(cfg["certs"]) / host, "default", provider, lambda t=token: t
                )
                creds.step(client)
                out[i] = creds
                break
            except (ApiFailure, Unreachable) as exc:
                key = f"{type(exc).__name__} {getattr(exc, 'status', '')}".strip()
                failures[key] = failures.get(key, 0) + 1
                time.sleep(min(5.0, 0.2 * 2**attempt))
    admin.close()
    cost = {
        "enrolled": len(out),
        "failures": failures,
        "wall_s": time.monotonic() - started,
        "cpu_s": time.process_time() - cpu,
    }
    return out, cost


def load_process(
    cfg: dict[str, Any], first: int, count: int, q: Any, end: Any, go: Any, ready: Any
) -> None:
    die_with_parent()  # a benchmark killed with SIGKILL leaves no daemons behind
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    threading.stack_size(256 * 1024)
    probe = cfg.get("probe", False)
    if not probe:  # a probe process keeps Python's usual switch interval, as a daemon
        sys.setswitchinterval(LOAD_SWITCH_INTERVAL)
        os.nice(cfg.get("nice", 0))
        cpugroup.join(cfg.get("cpu_group"))
    import logging

    logging.getLogger("nymph").setLevel(logging.ERROR)  # 10,000 daemons' "reconnected" lines
    from dreamlake.controlplane.client import Client
    from dreamlake.controlplane.connection import Exchange
    from dreamlake.controlplane.nymph.daemon import Daemon, DaemonConfig

    records: list[tuple[float, str, int, float, bool, float, float]] = []

    def observe(e: Exchange) -> None:
        server_ms = float("nan")
        if e.answer is not None:
            timing = e.answer.header("server-timing") or ""
            if "dur=" in timing:
                server_ms = float(timing.split("dur=", 1)[1].split(";")[0])
        status = e.status if e.status is not None else 0
        kind = _kind(e.method, e.path)
        if e.error is not None:
            kind += f" {type(e.error).__name__}"
        records.append(
            (
                time.time(),
                kind,
                status,
                e.seconds,
                e.new_connection,
                server_ms,
                e.connect_seconds,
            )
        )

    runner = SleepRunner()
    urls: list[str] = cfg["urls"]
    keep_alive = cfg["model"] == "keepalive"
    tls = bool(cfg.get("ca"))
    daemons: list[Any] = []
    names = {
        i: (f"probe-{i}", f"probe-{i}") if probe else (f"p{i % PROVIDERS}", f"host-{i}")
        for i in range(first, first + count)
    }
    clients = {
        i: Client(
            urls[i % len(urls)],
            None if tls else cfg["token"],  # over TLS: its certificate, no bearer token
            keep_alive=keep_alive,
            observer=observe,
            source_address=SOURCES[i % len(SOURCES)],
            ca=cfg.get("ca"),
        )
        for i in range(first, first + count)
    }
    credentials: dict[int, Any] = {}
    setup: dict[str, Any] = {}
    if tls:
        credentials, setup = enrol(cfg, clients, names)
        records.clear()  # the enrolment is set-up, not the fleet's traffic
        for c in clients.values():
            c.close()  # a daemon's first request after it has its certificate shakes hands anew
    with ready.get_lock():
        ready.value += 1
    while go.value == 0:  # the orchestrator starts every process's ramp at once
        time.sleep(0.2)
    start_at = go.value
    wait_until(start_at)
    spacing = cfg["ramp"] / max(1, cfg["daemons"])
    for i in range(first, first + count):
        client = clients[i]
        own = client.url
        config = DaemonConfig(
            provider=names[i][0],
            queues=[],
            instance_id=f"probe-{i}" if probe else f"d{i}",
            host=names[i][1],
            version="bench",
            poll_wait=POLL_WAIT,
            servers=[u for u in urls if u != own],
        )
        d = Daemon(client, config, runner, credentials=credentials.get(i))  # type: ignore[arg-type]
        d.start()
        daemons.append(d)
        wait_until(start_at + (i + 1) * spacing)
    gc.freeze()  # the daemons' objects are long-lived: keep the collector off them
    if not keep_alive:
        legacy_heartbeats(daemons, end)
    while end.value == 0 or time.time() < end.value:  # the orchestrator sets the end
        time.sleep(0.5)
    for d in daemons:
        d.stop.set()
    for d in daemons:
        d._abort_poll()
    q.put(
        {
            "records": records,
            "runs": runner.runs,
            "opened": sum_opened(daemons),
            "probe": probe,
            "setup": setup,
        }
    )


def replay_process(cfg: dict[str, Any], first: int, count: int, q: Any, end: Any) -> None:
    """Daemons ``first`` … ``first + count - 1`` of the churn model, replayed
    (``churn_replay.py``): the same requests, connections and timing, from one
    event loop instead of a thread per daemon."""
    die_with_parent()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    os.nice(cfg.get("nice", 0))
    cpugroup.join(cfg.get("cpu_group"))
    import asyncio

    from churn_replay import ReplayDaemon, run_fleet

    records: list[tuple[float, str, int, float, bool, float, float]] = []
    runs: dict[str, int] = {}
    urls: list[str] = cfg["urls"]
    daemons = [
        ReplayDaemon(
            urls[i % len(urls)],
            cfg["token"],
            provider=f"p{i % PROVIDERS}",
            instance_id=f"d{i}",
            host_name=f"host-{i}",
            version="bench",
            source=SOURCES[i % len(SOURCES)],
            poll_wait=POLL_WAIT,
            heartbeat=LIVE_SECONDS / 3,
            record=lambda *r: records.append(r),
            runs=runs,
        )
        for i in range(first, first + count)
    ]
    spacing = cfg["ramp"] / max(1, cfg["daemons"])
    lags: list[tuple[float, float]] = []
    gc.freeze()
    run: Any = asyncio.run
    with contextlib.suppress(ImportError):  # the server extra's loop, where it is
        import uvloop

        run = uvloop.run
    run(
        run_fleet(
            daemons,
            start_at=cfg["start_at"] + (first + 1) * spacing,
            spacing=spacing,
            heartbeat=LIVE_SECONDS / 3,
            ended=lambda: end.value != 0 and time.time() >= end.value,
            lags=lags,
        )
    )
    opened = sum(d.opened for d in daemons)
    q.put({"records": records, "runs": runs, "opened": opened, "probe": False, "lags": lags})


def sum_opened(daemons: list[Any]) -> int:
    total = 0
    for d in daemons:
        for c in (d.client, d.poller):
            if c._conn is not None:
                total += c._conn.opened
    return total


def legacy_heartbeats(daemons: list[Any], end: Any, threads: int = 16) -> None:
    """The heartbeat loop of daemons before keep-alive: every interval, busy or not,
    through the daemon's own (connection-per-request) client."""
    interval = LIVE_SECONDS / 3

    def beat(share: list[Any], offset: float) -> None:
        start = time.time() + offset
        k = 0
        while end.value == 0 or time.time() < end.value:
            for j, d in enumerate(share):
                wait_until(start + k * interval + j * interval / max(1, len(share)))
                if end.value and time.time() >= end.value:
                    return
                wid = d.worker_id
                if wid is not None and not d._busy.is_set():  # busy: its own loop beats
                    with contextlib.suppress(Exception):
                        d.client.heartbeat(wid)
            k += 1

    for t in range(threads):
        share = daemons[t::threads]
        threading.Thread(
            target=beat, args=(share, t * interval / threads / max(1, len(share))), daemon=True
        ).start()


def wait_until(when: float) -> None:
    delay = when - time.time()
    if delay > 0:
        time.sleep(delay)


# -- the orchestrator -----------------------------------------------------------------


class Census:
    """How many daemons are registered, and when each was last seen, read in the
    database itself (SQLite beside the server, or the PostgreSQL it uses). Asking the
    server instead, the benchmark's own listings loaded the server it measures: a
    listing of 10,000 workers costs the server about 0.35 s of CPU (see
    benchmarks/README.md). A beat reaches the database within the server's flush
    interval, so a worker is counted seen (or live) here at most that much later
    than the server itself would say."""

    def __init__(self, db: str | None, data: Path) -> None:
        from dreamlake.controlplane.db import normalize_url, sqlite_url
        from sqlalchemy import create_engine
        from sqlalchemy.pool import NullPool

        url = normalize_url(db) if db else sqlite_url(data)  # the driver the server uses
        self.engine = create_engine(url, poolclass=NullPool)

    def registered(self) -> int:
        from sqlalchemy import text

        with self.engine.connect() as conn:
            sql = "SELECT count(*) FROM workers WHERE deregistered_at IS NULL"
            return int(conn.execute(text(sql)).scalar_one())

    def last_seen(self) -> dict[str, float]:
        """Each registered daemon's instance id: when the database last saw it."""
        from dreamlake.controlplane.models import Worker
        from sqlalchemy import select

        q = select(Worker.instance_id, Worker.last_seen).where(Worker.deregistered_at.is_(None))
        with self.engine.connect() as conn:
            return {i: t.timestamp() for i, t in conn.execute(q)}

    def not_live(self, live_seconds: float) -> int:
        bound = time.time() - live_seconds
        return sum(1 for t in self.last_seen().values() if t < bound)


def seen_since(census: Census, since: float, instances: set[str] | None = None) -> tuple[int, int]:
    """(workers seen at or after ``since``, workers asked about)."""
    seen = census.last_seen()
    if instances is not None:
        seen = {i: t for i, t in seen.items() if i in instances}
    return sum(1 for t in seen.values() if t >= since), len(seen)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-n", "--daemons", type=int, default=10_000)
    ap.add_argument("-d", "--duration", type=float, default=60.0, help="seconds after the ramp")
    ap.add_argument("--model", choices=["keepalive", "churn"], default="keepalive")
    ap.add_argument(
        "--churn-load",
        choices=["replay", "daemons"],
        default="replay",
        help="churn: the daemons' requests replayed byte for byte, or the daemons in threads",
    )
    ap.add_argument("--ramp", type=float, default=None, help="seconds to start every daemon")
    ap.add_argument("--procs", type=int, default=None, help="load processes")
    ap.add_argument("--work-rate", type=float, default=5.0, help="work items per second")
    ap.add_argument("--work-seconds", type=float, default=12.0, help="each item runs this long")
    ap.add_argument("--replicas", type=int, default=1, choices=[1, 2])
    ap.add_argument("--db", help="PostgreSQL URL (default: SQLite in a temp dir)")
    ap.add_argument("--pg-temp", action="store_true", help="start a throwaway PostgreSQL")
    ap.add_argument("--restart-at", type=float, default=None)
    ap.add_argument("--kill-replica-at", type=float, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the servers' data and logs")
    ap.add_argument("--probes", type=int, default=40, help="busy daemons in a process of their own")
    ap.add_argument(
        "--nice", type=int, default=0, help="the load processes' niceness (not the probes')"
    )
    ap.add_argument(
        "--load-weight",
        type=float,
        default=2.0,
        help="the load processes' CPU weight together, as a fraction of one process outside "
        "them (a cpu cgroup, cpugroup.py: the daemons run on hosts of their own); 0: none, "
        "every daemon thread competes with the server's processes for the cores",
    )
    ap.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS; each daemon enrols for a client certificate with a bootstrap token "
        "and authenticates with it (as nymph does over https)",
    )
    ap.add_argument(
        "--tls-processes",
        type=int,
        default=None,
        help="with --tls: the servers' TLS edge processes (lakeshore serve --tls-processes; "
        "default: the server's, the machine's cores; 0: TLS on the event loop)",
    )
    ap.add_argument(
        "--watch-stalls",
        action="store_true",
        help="watch each server's event loop for stalls over 30 ms (stallwatch/)",
    )
    args = ap.parse_args()
    if args.daemons > 20_000 or args.duration > 600:
        raise SystemExit("bounded: at most 20,000 daemons and 600 s")
    if args.kill_replica_at is not None and args.replicas != 2:
        raise SystemExit("--kill-replica-at needs --replicas 2")
    replay = args.model == "churn" and args.churn_load == "replay"
    if replay and args.kill_replica_at is not None:
        raise SystemExit("a replayed daemon keeps to its one server: --churn-load daemons")
    if replay and args.tls:
        raise SystemExit(
            "--tls runs the daemons themselves: the replay writes plain-HTTP requests with a "
            "bearer token; with --model churn add --churn-load daemons"
        )
    ramp = args.ramp if args.ramp is not None else max(5.0, args.daemons / 500)
    # a process per 500 daemons: each has its own interpreter lock, and a starved
    # load process would be counted as server latency; a replayed fleet is one event
    # loop per 5,000
    procs = args.procs or max(1, math.ceil(args.daemons / (5000 if replay else 500)))
    pg = TempPostgres() if args.pg_temp else None
    db = pg.start() if pg else args.db
    if args.replicas > 1 and not db:
        raise SystemExit("two replicas need PostgreSQL (--db URL or --pg-temp)")
    from cryptography.fernet import Fernet
    from dreamlake.controlplane.client import ApiFailure, Client

    env = {"LAKESHORE_SECRET_KEY": Fernet.generate_key().decode()}
    if args.tls_processes is not None:
        env["LAKESHORE_TLS_PROCESSES"] = str(args.tls_processes)
    base = Path(tempfile.mkdtemp(prefix="lakeshore-daemons-"))
    if args.watch_stalls:  # each server writes its event loop's stalls (stallwatch/)
        watch = str(Path(__file__).resolve().parent / "stallwatch")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [watch, os.environ.get("PYTHONPATH")]))
        env["STALLWATCH"] = "on"
    pki = make_pki(base / "pki") if args.tls else None
    ca = str(pki / "ca.crt") if pki else None
    servers = [Server(db, base / f"s{i}", env, pki=pki).start() for i in range(args.replicas)]
    out: dict[str, Any] = {
        "daemons": args.daemons,
        "model": args.model,
        "database": "postgresql" if db else "sqlite",
        "replicas": args.replicas,
        "duration_s": args.duration,
        "ramp_s": ramp,
        "load_processes": procs,
        "load": "replay" if replay else "daemons",
        "load_nice": args.nice,
        "load_cpu_group": None,
        "tls": args.tls,
        "loadavg_before": os.getloadavg(),
    }
    counters_before = listen_counters()
    workers: list[Any] = []  # the load processes
    group, said = cpugroup.make(args.load_weight) if args.load_weight > 0 else (None, "none")
    out["load_cpu_group"] = said
    clock = {"steady_from": float("inf"), "end_at": float("inf")}
    try:
        token = (base / "s0" / "admin.token").read_text().strip()
        admin = Client(servers[0].url, token, keep_alive=True, timeout=30, ca=ca)
        start_at = time.time() + 3.0
        # set once every daemon has registered: then one long-poll's wait, so the
        # steady window sees only polls renewed on their kept connections
        steady_from = end_at = float("inf")
        cfg = {
            "urls": [s.url for s in servers],
            "token": token,
            "model": args.model,
            "daemons": args.daemons,
            "start_at": start_at,
            "ramp": ramp,
            "nice": args.nice,
            "cpu_group": group,
            "ca": ca,
            "certs": str(base / "certs"),
        }
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        end = ctx.Value("d", 0.0)
        go = ctx.Value("d", 0.0)  # when the daemons' ramp starts (after a TLS enrolment)
        ready = ctx.Value("i", 0)  # load processes ready to start their daemons
        share = math.ceil(args.daemons / procs)
        for p in range(procs):
            first, count = p * share, min(share, args.daemons - p * share)
            if count > 0:
                if replay:
                    w = ctx.Process(target=replay_process, args=(cfg, first, count, q, end))
                else:
                    w = ctx.Process(
                        target=load_process, args=(cfg, first, count, q, end, go, ready)
                    )
                w.start()
                workers.append(w)
        if args.probes:
            probe_cfg = dict(cfg, probe=True, daemons=args.probes, ramp=1.0)
            w = ctx.Process(
                target=load_process, args=(probe_cfg, 0, args.probes, q, end, go, ready)
            )
            w.start()
            workers.append(w)
        threaded = len(workers) if not replay else int(bool(args.probes))
        if args.tls:  # each daemon's first start: its key, its certificate (set-up)
            enrolling = time.time()
            enrol_cpu = [server_cpu(s.proc.pid) for s in servers]  # type: ignore[union-attr]
            while ready.value < threaded:
                if any(w.exitcode is not None for w in workers):
                    raise SystemExit("a load process died while its daemons enrolled")
                print(f"{ready.value} of {threaded} load processes enrolled", file=sys.stderr)
                time.sleep(1.0)
            pids = [s.proc.pid for s in servers]  # type: ignore[union-attr]
            spent = sum(server_cpu(pid) - c for pid, c in zip(pids, enrol_cpu, strict=False))
            out["tls_enrolment"] = {
                "wall_s": round(time.time() - enrolling, 1),
                "server_cpu_s": round(spent, 1),
            }
            start_at = time.time() + 3.0
        go.value = start_at
        cpu0 = [server_cpu(s.proc.pid) for s in servers]  # type: ignore[union-attr]
        wall0 = [time.monotonic()] * len(servers)
        submitted: list[str] = []
        probe_items: list[str] = []
        submit_errors: dict[str, int] = {}
        peaks: dict[str, list[float]] = {
            "open_files": [0] * len(servers),
            "rss_mib": [0.0] * len(servers),
        }
        not_live: list[int] = []
        events: dict[str, Any] = {}
        stop = threading.Event()

        def submitter() -> None:
            while clock["steady_from"] == float("inf") and not stop.wait(0.5):
                pass
            steady_from, end_at = clock["steady_from"], clock["end_at"]
            wait_until(steady_from)

            def probe_work() -> None:
                # busy until 5 s before the end: a beat every 10 s, the probes' beats
                # spread over those 10 s (independent daemons; at once, 40 handshakes
                # of one process under one lock measured the process)
                spread = LIVE_SECONDS / 3 / max(1, args.probes)
                submit = admin.sibling()
                for k in range(args.probes):
                    wait_until(steady_from + k * spread)
                    with contextlib.suppress(Exception):
                        seconds = args.duration - 5 - k * spread
                        item = submit.submit_work(f"probe-{k}", f"sleep {seconds:g}")
                        probe_items.append(item["id"])
                submit.close()

            threading.Thread(target=probe_work, daemon=True).start()
            last = end_at - args.work_seconds - 8
            k = 0
            while time.time() < last and not stop.is_set():
                provider = f"p{(k * 7919) % min(PROVIDERS, args.daemons)}"
                try:
                    item = admin.submit_work(provider, f"sleep {args.work_seconds:g}")
                    submitted.append(item["id"])
                except Exception as exc:
                    key = f"{type(exc).__name__} {getattr(exc, 'status', '')}".strip()
                    submit_errors[key] = submit_errors.get(key, 0) + 1
                k += 1
                wait_until(steady_from + k / args.work_rate)

        def sampler() -> None:
            next_live = float("inf")
            while not stop.wait(1.0):
                if next_live == float("inf"):
                    next_live = clock["steady_from"]
                for j, s in enumerate(servers):
                    if s.proc is not None and s.proc.poll() is None:
                        with contextlib.suppress(OSError):  # killed between the two looks
                            peaks["open_files"][j] = max(peaks["open_files"][j], s.open_files())
                            peaks["rss_mib"][j] = max(peaks["rss_mib"][j], rss_mib(s.proc.pid))
                if time.time() >= next_live and not events.get("down"):
                    with contextlib.suppress(Exception):
                        not_live.append(census.not_live(LIVE_SECONDS))
                    next_live = time.time() + 10

        healthz: list[tuple[float, float]] = []

        def prober() -> None:
            """The server's event loop, seen from outside: /healthz every 0.5 s."""
            probe = Client(servers[0].url, token, keep_alive=True, timeout=30, ca=ca)
            while not stop.wait(0.5):
                t = time.perf_counter()
                with contextlib.suppress(Exception):
                    probe.healthz()
                    healthz.append((time.time(), time.perf_counter() - t))

        census = Census(db, base / "s0")
        threads = [threading.Thread(target=f, daemon=True) for f in (submitter, sampler, prober)]
        for t in threads:
            t.start()

        # the ramp: every daemon starts, registers and holds its first poll
        registered = 0
        while time.time() < start_at + ramp + 300:
            try:
                registered = census.registered()
            except Exception as exc:
                print(f"counting workers: {exc}", file=sys.stderr)
            if registered >= args.daemons + args.probes:
                break
            wanted = args.daemons + args.probes
            print(f"{registered} of {wanted} daemons registered", file=sys.stderr)
            time.sleep(2.0)
        out["registered"] = registered
        out["all_registered_s"] = round(time.time() - start_at, 1)
        steady_from = time.time() + POLL_WAIT + 2.0
        end_at = steady_from + args.duration
        clock.update(steady_from=steady_from, end_at=end_at)
        end.value = end_at

        if args.restart_at is not None:
            wait_until(steady_from + args.restart_at)
            events["down"] = True
            stopped = time.time()
            servers[0].stop()
            servers[0] = Server(db, base / "s0", env, port=servers[0].port, pki=pki).start()
            up = time.time()
            events.setdefault("windows", []).append((stopped, up + 60))
            cpu0[0] = server_cpu(servers[0].proc.pid)  # type: ignore[union-attr]
            wall0[0] = time.monotonic()
            admin.close()
            events["down"] = False
            deadline = up + 120
            seen = (0, args.daemons)
            while time.time() < deadline:
                with contextlib.suppress(Exception):
                    seen = seen_since(census, up)
                    if seen[0] >= args.daemons:
                        break
                time.sleep(1.0)
            out["restart"] = {
                "down_s": round(up - stopped, 2),
                "every_daemon_seen_again_s": round(time.time() - up, 1)
                if seen[0] >= args.daemons
                else None,
                "seen_again": seen[0],
            }

        if args.kill_replica_at is not None:
            wait_until(steady_from + args.kill_replica_at)
            moved = {f"d{i}" for i in range(1, args.daemons, 2)}
            assert servers[1].proc is not None
            killed = time.time()
            events.setdefault("windows", []).append((killed, killed + 60))
            servers[1].proc.kill()
            servers[1].proc.wait()
            seen = (0, len(moved))
            while time.time() < killed + 120:
                with contextlib.suppress(Exception):
                    seen = seen_since(census, killed, moved)
                    if seen[0] >= len(moved):
                        break
                time.sleep(1.0)
            out["kill_replica"] = {
                "daemons_on_it": len(moved),
                "every_one_moved_s": round(time.time() - killed, 1)
                if seen[0] >= len(moved)
                else None,
                "moved": seen[0],
            }

        results = []
        deadline = max(end_at, time.time()) + 300
        # a load process that died reports nothing: say so and go on; read every
        # result before joining (a process writing to the queue waits for its reader)
        for _ in workers:
            with contextlib.suppress(queue.Empty):
                results.append(q.get(timeout=max(1.0, deadline - time.time())))
        for w in workers:
            w.join(10)
            if w.is_alive():
                w.terminate()
        if len(results) < len(workers):
            out["load_processes_without_results"] = {
                "count": len(workers) - len(results),
                "exit_codes": [w.exitcode for w in workers],
            }
        stop.set()
        for t in threads:
            t.join(30)
        out["servers"] = [
            {
                "cpu_share_of_one_core": round(
                    (server_cpu(s.proc.pid) - c0) / (time.monotonic() - wall0[j]), 2
                )
                if s.proc is not None and s.proc.poll() is None
                else None,
                "peak_open_files": peaks["open_files"][j],
                "peak_rss_mib": round(peaks["rss_mib"][j], 1),
            }
            for j, (s, c0) in enumerate(zip(servers, cpu0, strict=False))
        ]
        windows = events.get("windows", [])
        fleet = [r for r in results if not r.get("probe")]
        if args.tls:
            setups = [r.get("setup") or {} for r in results]
            failures: dict[str, int] = {}
            for st in setups:
                for k, v in st.get("failures", {}).items():
                    failures[k] = failures.get(k, 0) + v
            out["tls_enrolment"].update(
                certificates=sum(st.get("enrolled", 0) for st in setups),
                load_cpu_s=round(sum(st.get("cpu_s", 0.0) for st in setups), 1),
                retried=failures,
            )
        out.update(summarize(fleet, steady_from, end_at, windows))
        lags = [v for r in fleet for at, v in r.get("lags", []) if steady_from <= at <= end_at]
        if lags:  # the replay's own event loops: how late they ran what was due
            out["load_loop_lag"] = figures(lags)
        probes = [r for r in results if r.get("probe")]
        if probes:
            beats = summarize(probes, steady_from, end_at, windows)
            out["probe"] = {
                "daemons": args.probes,
                **{k: beats[k] for k in ("errors", "error_kinds", "steady", "steady_slowest")},
            }
        out["not_live_per_sample"] = not_live
        steady_healthz = [v for at, v in healthz if steady_from <= at <= end_at]
        out["healthz_probe"] = {
            **figures(steady_healthz),
            "max_ms_during_ramp": max(
                (v for at, v in healthz if at < steady_from), default=float("nan")
            )
            * 1000,
        }
        # work: every item submitted finished once
        runs: dict[str, int] = {}
        for r in fleet:
            for wid, k in r["runs"].items():
                runs[wid] = runs.get(wid, 0) + k
        states: dict[str, int] = {}
        unsucceeded: list[dict[str, Any]] = []  # why, for the first few
        for wid in submitted:
            try:
                item = admin.get_work(wid)
                state = item["state"]
                if state != "succeeded" and len(unsucceeded) < 5:
                    unsucceeded.append({k: item.get(k) for k in
                                        ("state", "error", "createdAt", "startedAt", "finishedAt")})  # fmt: skip
            except ApiFailure as exc:
                state = f"http {exc.status}"
            states[state] = states.get(state, 0) + 1
        out["work"] = {
            "submitted": len(submitted),
            "submit_errors": submit_errors,
            "states": states,
            "not_succeeded": unsucceeded,
            "run_more_than_once": sum(1 for w in submitted if runs.get(w, 0) > 1),
            "never_run": sum(1 for w in submitted if runs.get(w, 0) == 0),
        }
        if "probe" in out:
            probe_states: dict[str, int] = {}
            for wid in probe_items:
                with contextlib.suppress(ApiFailure):
                    state = admin.get_work(wid)["state"]
                    probe_states[state] = probe_states.get(state, 0) + 1
            out["probe"]["work"] = {"submitted": len(probe_items), "states": probe_states}
    finally:
        counters_after = listen_counters()
        out["listen_counters"] = {
            k: {"before": counters_before.get(k), "after": v} for k, v in counters_after.items()
        }
        out["loadavg_after"] = os.getloadavg()
        for w in workers:  # still running only when the orchestrator failed
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join(10)
        cpugroup.remove(group)
        for s in servers:
            s.stop()
        if pg:
            pg.stop()
        if args.watch_stalls:
            out["stalls"] = [stall_summary(s.data / "stalls.json", clock) for s in servers]
        if args.keep:
            out["kept"] = str(base)
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(out, indent=2, default=lambda x: round(x, 2)))


def stall_summary(path: Path, clock: dict[str, float]) -> dict[str, Any]:
    """What ``stallwatch`` saw of one server's event loop, the steady window apart."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    start, end = clock.get("steady_from", 0.0), clock.get("end_at", float("inf"))
    steady = [s for s in doc["stalls"] if start <= s["at"] <= end]
    return {
        "stalls": len(doc["stalls"]),
        "steady_stalls_ms": sorted((s["ms"] for s in steady), reverse=True),
        "steady_ran_ms": sum(s["ran_ms"] for s in steady),
        "steady_runq_wait_ms": sum(s["runq_wait_ms"] for s in steady),
        "loop_thread_in": doc["loop_thread_in"][:5],
        "other_threads": doc["other_threads"][:5],
    }


def figures(values: list[float]) -> dict[str, float]:
    """Count, p50, p99 and max in ms of ``values`` (seconds)."""
    return {
        "n": len(values),
        "p50_ms": pct(values, 0.5) * 1000,
        "p99_ms": pct(values, 0.99) * 1000,
        "max_ms": max(values, default=float("nan")) * 1000,
    }


def summarize(
    results: list[dict[str, Any]],
    steady_from: float,
    end_at: float,
    windows: list[tuple[float, float]],
) -> dict[str, Any]:
    """Figures over every request the daemons made; a restart's or a kill's window
    (from it until 60 s after) is counted apart and left out of the latencies."""
    records = [r for res in results for r in res["records"]]
    by_kind: dict[str, list[float]] = {}
    overhead: list[float] = []
    errors: dict[str, int] = {}
    ramp_errors: dict[str, int] = {}  # of ``errors``, those before the steady window
    during: dict[str, int] = {}
    shed = 0
    new_conns = 0
    connects: list[float] = []
    slowest: dict[str, list[tuple[float, float, float, bool, float]]] = {}
    for at, kind, status, seconds, new, server_ms, connect in records:
        if at > end_at:  # the daemons stopped: their held polls were cut
            continue
        new_conns += bool(new)
        in_event = any(lo <= at <= hi for lo, hi in windows)
        if status == 0 or (status >= 500 and status != 503):
            key = f"{kind} {status or 'no answer'}"
            bucket = during if in_event else errors
            bucket[key] = bucket.get(key, 0) + 1
            if not in_event and at < steady_from:
                ramp_errors[key] = ramp_errors.get(key, 0) + 1
        if status == 503:
            shed += 1
        if not steady_from <= at <= end_at or status == 0 or in_event:
            continue
        if new:
            connects.append(connect)
        if kind.startswith("poll"):
            if server_ms == server_ms:  # not NaN
                overhead.append(seconds - connect - server_ms / 1000)
        else:
            by_kind.setdefault(kind, []).append(seconds)
            slowest.setdefault(kind, []).append((seconds, server_ms / 1000, connect, bool(new), at))

    return {
        "requests": len(records),
        "connections_opened": new_conns,
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "errors_before_steady": ramp_errors,
        "failed_during_restart_or_kill": during,
        "deliberate_503": shed,
        "steady": {k: figures(v) for k, v in sorted(by_kind.items())},
        # where each kind's slowest answers spent their time: in the server's own
        # handling (Server-Timing), opening the connection, or neither (the request
        # waiting to be read, or the answer to be taken, on a busy loop or client)
        "steady_slowest": {
            k: [
                {
                    "ms": s * 1000,
                    "server_ms": srv * 1000,
                    "connect_ms": c * 1000,
                    "new": n,
                    "at": round(t, 3),
                }
                for s, srv, c, n, t in sorted(v, reverse=True)[:5]
            ]
            for k, v in sorted(slowest.items())
        },
        "poll_overhead": figures(overhead),
        "connect": figures(connects),
    }


if __name__ == "__main__":
    main()
