"""What a running ``lakeshore serve`` is doing, second by second, seen from outside:
its event loop's thread (the process's main thread) on a core and waiting for one,
from the kernel's schedstat, and how many connections wait in its listening
sockets' accept queues (``ss``, Recv-Q, summed over the port's listeners).

    python benchmarks/serverwatch.py [--port P] [-d SECONDS] > watch.jsonl

One JSON line a second: ``ran`` and ``waited`` (seconds per second: on a core, and
runnable but waiting for one; the rest it slept: on its sockets, or blocked on the
interpreter lock), ``switches`` (context switches per second), ``others_ran`` (the
server's other threads on a core, its thread pool among them: seconds per second,
summed), ``accept_queue``, ``steal`` (seconds per second the machine's hypervisor
gave its cores to someone else, summed over cores) and the machine's one-minute
load average. Without ``--port`` it follows the first ``lakeshore serve`` it finds
(a restarted server too). Run it beside ``fleet_daemons.py``; it reads /proc only
and opens no connection.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import time
from pathlib import Path


def find_server(port: int | None) -> tuple[int, int] | None:
    """(pid, port) of a ``lakeshore serve`` (on ``port``, when given)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" not in argv or not any(a.endswith(b"lakeshore") for a in argv):
            continue
        if b"--port" not in argv:
            continue
        its = int(argv[argv.index(b"--port") + 1])
        if port is None or its == port:
            return int(entry.name), its
    return None


def accept_queue(port: int) -> int:
    """Connections waiting to be accepted on ``port``, over all its listeners."""
    out = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=False
    ).stdout
    return sum(int(line.split()[1]) for line in out.splitlines() if line.split())


Snapshot = tuple[int, int, int, dict[str, int], int]


def snapshot(pid: int) -> Snapshot:
    """(loop thread ran ns, waited ns, switches, the other threads' ran ns by thread,
    the machine's steal ticks)."""
    ran, waited, switches = map(int, Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split())
    others: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        if task.name != str(pid):
            with contextlib.suppress(OSError, ValueError):
                others[task.name] = int((task / "schedstat").read_text().split()[0])
    cpu = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    steal = int(cpu[8]) if len(cpu) > 8 else 0
    return ran, waited, switches, others, steal


def others_ran(now: dict[str, int], before: dict[str, int]) -> int:
    """ns the other threads ran between two snapshots (a thread new since: all of it)."""
    return sum(ns - before.get(tid, 0) for tid, ns in now.items())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=None)
    ap.add_argument("-d", "--duration", type=float, default=600.0)
    args = ap.parse_args()
    ends = time.time() + min(args.duration, 3600.0)
    tick = os.sysconf("SC_CLK_TCK")
    last: tuple[int, float, Snapshot] | None = None
    while time.time() < ends:
        found = find_server(args.port)
        if found is None:
            last = None
            time.sleep(1.0)
            continue
        pid, port = found
        try:
            now_seen = snapshot(pid)
        except OSError:
            last = None
            continue
        now = time.time()
        if last is not None and last[0] == pid:
            dt = now - last[1]
            before = last[2]
            ran, waited, switches = (
                now_seen[0] - before[0],
                now_seen[1] - before[1],
                now_seen[2] - before[2],
            )
            others = others_ran(now_seen[3], before[3])
            steal = now_seen[4] - before[4]
            print(
                json.dumps(
                    {
                        "t": round(now, 1),
                        "ran": round(ran / 1e9 / dt, 3),
                        "waited": round(waited / 1e9 / dt, 3),
                        "switches": round(switches / dt),
                        "others_ran": round(others / 1e9 / dt, 3),
                        "accept_queue": accept_queue(port),
                        "steal": round(steal / tick / dt, 3),
                        "load1": round(os.getloadavg()[0], 2),
                    }
                ),
                flush=True,
            )
        last = (pid, now, now_seen)
        time.sleep(1.0)


if __name__ == "__main__":
    main()
