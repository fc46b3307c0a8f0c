"""What a running ``lakeshore serve`` is doing, second by second, seen from outside:
its event loop's thread (the process's main thread) on a core and waiting for one,
from the kernel's schedstat, and how many connections wait in its listening
sockets' accept queues (``ss``, Recv-Q, summed over the port's listeners).

    python benchmarks/serverwatch.py [--port P] [-d SECONDS] > watch.jsonl

One JSON line a second: ``ran`` and ``waited`` (seconds per second: on a core, and
runnable but waiting for one; the rest it slept: on its sockets, or blocked on the
interpreter lock), ``switches`` (context switches per second), ``accept_queue``
and the machine's one-minute load average. Without ``--port`` it follows the first
``lakeshore serve`` it finds (a restarted server too). Run it beside
``fleet_daemons.py``; it reads /proc only and opens no connection.
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=None)
    ap.add_argument("-d", "--duration", type=float, default=600.0)
    args = ap.parse_args()
    ends = time.time() + min(args.duration, 3600.0)
    last: tuple[int, float, int, int, int] | None = None
    while time.time() < ends:
        found = find_server(args.port)
        if found is None:
            last = None
            time.sleep(1.0)
            continue
        pid, port = found
        try:
            ran, waited, switches = map(
                int, Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()
            )
        except OSError:
            last = None
            continue
        now = time.time()
        if last is not None and last[0] == pid:
            dt = now - last[1]
            print(
                json.dumps(
                    {
                        "t": round(now, 1),
                        "ran": round((ran - last[2]) / 1e9 / dt, 3),
                        "waited": round((waited - last[3]) / 1e9 / dt, 3),
                        "switches": round((switches - last[4]) / dt),
                        "accept_queue": accept_queue(port),
                        "load1": round(os.getloadavg()[0], 2),
                    }
                ),
                flush=True,
            )
        last = (pid, now, ran, waited, switches)
        time.sleep(1.0)


if __name__ == "__main__":
    main()
