"""What a daemon's reconnect costs over TLS with its client certificate, a full
handshake against a resumed one (controlplane/tlsresume.py).

One ``lakeshore serve --tls-cert/--tls-key`` (SQLite; a CA and a certificate for
127.0.0.1 made as the fleet benchmark makes them), one daemon enrolled as ``nymph``
enrols (a bootstrap token exchanged for its certificate by its own
``Credentials``), then ``--requests`` ``whoami`` calls, each on a new connection
(what a daemon's first heartbeat of a work item does), by the certificate alone:
in rounds that take turns, the client as it was (no session offered: a full
handshake each time) and the client as it is (the last session offered: resumed).
Printed per reconnect: the server's CPU (its process and any children, from
/proc), the client's own CPU (``time.process_time``) and the wall time, the median
of the rounds; and how many connections were resumed.

    .venv/bin/python benchmarks/tls_resume.py [--requests 200] [--rounds 3] [--json OUT]
        [--server-env NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet import cpu_seconds
from fleet_daemons import Server, make_pki


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and every process below it."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    total = 0.0
    for child in parents:
        up = child
        while up > 1 and up != pid:
            up = parents.get(up, 0)
        if up == pid:
            with contextlib.suppress(OSError):  # ended meanwhile
                total += cpu_seconds(child)
    return total


def run(client: Any, pid: int, n: int) -> dict[str, float]:
    seen: list[Any] = []
    client.observer = seen.append
    client.whoami()  # a first connection: its session is the one the next offers
    seen.clear()
    server0, client0, wall0 = tree_cpu(pid), time.process_time(), time.perf_counter()
    for _ in range(n):
        who = client.whoami()
        assert who.get("scope") == "daemon", who
    server1, client1, wall1 = tree_cpu(pid), time.process_time(), time.perf_counter()
    assert all(e.new_connection for e in seen)
    return {
        "server_cpu_ms": (server1 - server0) * 1000 / n,
        "client_cpu_ms": (client1 - client0) * 1000 / n,
        "wall_ms": (wall1 - wall0) * 1000 / n,
        "resumed": sum(1 for e in seen if e.resumed) / n,
    }


def main() -> None:
    from dreamlake.controlplane.client import Client
    from dreamlake.controlplane.nymph.credentials import Credentials
    from dreamlake.controlplane.tlsresume import Sessions

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the server (its LAKESHORE_* variables are not passed on)",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        pki = make_pki(base / "pki")
        env = dict(item.split("=", 1) for item in args.server_env)
        server = Server(None, base / "s0", env, pki=pki).start()
        try:
            assert server.proc is not None
            ca = str(pki / "ca.crt")
            token = (base / "s0" / "admin.token").read_text().strip()
            admin = Client(server.url, token, ca=ca)
            boot = admin.create_token("default", scope="bootstrap", provider="lab", host="h")
            creds = Credentials(base / "id", "default", "lab", lambda: boot)
            daemon = Client(server.url, namespace="default", ca=ca)
            creds.step(daemon)
            assert daemon.cert is not None and daemon.token is None
            kinds: dict[str, list[dict[str, float]]] = {"full": [], "resumed": []}
            for _ in range(args.rounds):
                for kind in kinds:
                    client = Client(server.url, namespace="default", ca=ca, cert=daemon.cert)
                    if kind == "full":
                        client.sessions = None  # type: ignore[assignment]  # as before
                    else:
                        client.sessions = Sessions()
                    kinds[kind].append(run(client, server.proc.pid, args.requests))
        finally:
            server.stop()
    out: dict[str, Any] = {"requests": args.requests, "rounds": args.rounds,
                           "server_env": args.server_env, "load": os.getloadavg()}  # fmt: skip
    print(
        f"per reconnect, median of {args.rounds} rounds of {args.requests} (load {out['load'][0]:.1f})"
    )
    for kind, rounds in kinds.items():
        med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        out[kind] = {"median": med, "rounds": rounds}
        print(
            f"  {kind:8} server {med['server_cpu_ms']:.2f} ms CPU, client "
            f"{med['client_cpu_ms']:.2f} ms CPU, wall {med['wall_ms']:.2f} ms, "
            f"resumed {med['resumed']:.0%}"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
