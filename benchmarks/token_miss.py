"""What a miss of the control plane's token cache costs: the one query that finds a
token and its access to a namespace (``deps.access_of_digest``), on a bare
connection of the engine, per miss, on SQLite or PostgreSQL.

    .venv/bin/python benchmarks/token_miss.py [--pg-temp | --db URL] [--tokens 10000]
        [--providers 1000] [--misses 3000] [--rounds 5] [--json F]

Each round reads ``--misses`` different daemon tokens (none cached) in turn, one
way after the other, so the ways share the machine's noise:

- ``transaction``: on ``engine.connect()`` as it is (PostgreSQL: the driver's
  implicit BEGIN before the SELECT, the pool's ROLLBACK when it is returned);
- ``code``: on the connection the server's miss reads on (``deps._reading``);
- ``code, no pre-ping`` (PostgreSQL): the same on an engine whose pool does not
  check a connection before lending it (what the engine's ``pool_pre_ping`` costs).

Prints per miss the median over the rounds of this process's CPU time and wall
time, the database server's CPU time (PostgreSQL on this machine: its backends'
``/proc`` times, as root or as their user) and the round trips one miss makes to
PostgreSQL (counted by libpq's protocol trace: every Query or Sync the client
sends waits for the server once). ``--pg-temp`` starts a throwaway PostgreSQL as
``fleet.py`` does and removes it afterwards; without ``--db`` or ``--pg-temp``, a
temporary SQLite file.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet import TempPostgres


def build(engine: Any, tokens: int, providers: int) -> list[str]:
    """The real migrations, one namespace and ``tokens`` daemon tokens over
    ``providers`` providers; the digests of the tokens."""
    from dreamlake.controlplane import db
    from dreamlake.controlplane.models import Namespace, Token
    from dreamlake.controlplane.server.access.tokens import hash_token, new_token
    from sqlalchemy import insert

    db.run_migrations(engine)
    now = db.utcnow()
    digests = [hash_token(new_token()) for _ in range(tokens)]
    with engine.begin() as c:
        c.execute(insert(Namespace.__table__), [{"id": 1, "name": "default", "created_at": now}])
        rows = [
            {
                "token_hash": digest,
                "namespace_id": 1,
                "admin": False,
                "created_at": now,
                "scope": "daemon",
                "provider_name": f"p{i % providers}",
                "instance_id": f"i-{i}",
                "host": f"host-{i}",
            }
            for i, digest in enumerate(digests)
        ]
        c.execute(insert(Token.__table__), rows)
    return digests


def backend_cpu(url: str) -> float | None:
    """CPU seconds PostgreSQL's backends of this database have used (None when
    they are not readable here)."""
    import psycopg
    from sqlalchemy.engine import make_url

    u = make_url(url)
    try:
        with psycopg.connect(
            host=u.host,
            port=u.port,
            user=u.username,
            password=u.password,
            dbname=u.database,
            autocommit=True,
        ) as conn:
            pids = [
                row[0]
                for row in conn.execute(
                    "SELECT pid FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            ]
        total = 0.0
        for pid in pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total
    except (OSError, psycopg.Error):
        return None


def round_trips(engine: Any, miss: Callable[[], None]) -> int | None:
    """The round trips ``miss`` makes to PostgreSQL (libpq's trace of the pool's
    one connection: each Query or Sync sent waits for the server once)."""
    import psycopg

    if engine.dialect.name != "postgresql" or psycopg.pq.version() < 140000:
        return None
    with engine.connect() as c:
        pgconn = c.connection.dbapi_connection.pgconn
    with tempfile.TemporaryFile("w+") as trace:
        pgconn.trace(os.dup(trace.fileno()))  # closed by untrace
        pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            miss()
        finally:
            pgconn.untrace()
        trace.seek(0)
        sent = [line.split("\t") for line in trace if line.startswith("F\t")]
    return sum(
        1 for fields in sent if len(fields) > 2 and fields[2].split()[:1] in (["Query"], ["Sync"])
    )


def measure(args: argparse.Namespace, url: str) -> dict[str, Any]:
    from dreamlake.controlplane import db
    from dreamlake.controlplane.server import deps
    from sqlalchemy import create_engine

    engine = db.make_engine(url)
    digests = build(engine, args.tokens, args.providers)
    ways: dict[str, tuple[Any, Callable[[SimpleNamespace], Any]]] = {
        "transaction": (engine, lambda state: state.engine.connect()),
        "code": (engine, deps._reading),
    }
    if engine.dialect.name == "postgresql":
        unpinged = create_engine(db.normalize_url(url), pool_pre_ping=False, pool_size=12)
        ways["code, no pre-ping"] = (unpinged, deps._reading)
    states = {
        way: SimpleNamespace(
            engine=e,
            sessionmaker=db.make_sessionmaker(e),
            token_cache=deps.TokenCache(size=2 * args.tokens),
            refused_tokens=deps.RefusedTokens(),
        )
        for way, (e, _) in ways.items()
    }

    def miss(way: str, digest: str) -> None:
        state = states[way]
        with ways[way][1](state) as conn:
            deps.access_of_digest(state, digest, "default", conn)

    pg = engine.dialect.name == "postgresql"
    out: dict[str, Any] = {way: {"cpu": [], "wall": [], "db_cpu": []} for way in ways}
    for way in ways:  # warm: the pools' connections made, the statements compiled
        for digest in digests[:50]:
            miss(way, digest)
        states[way].token_cache.clear()
        out[way]["round_trips"] = round_trips(
            ways[way][0], functools.partial(miss, way, digests[-1])
        )
    n = min(args.misses, len(digests))
    for r in range(args.rounds):
        for way in ways:
            states[way].token_cache.clear()
            batch = digests[(r * n) % len(digests) :][:n] or digests[:n]
            server = backend_cpu(url) if pg else None
            cpu, wall = time.process_time(), time.perf_counter()
            for digest in batch:
                miss(way, digest)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            after = backend_cpu(url) if pg else None
            out[way]["cpu"].append(1000 * cpu / len(batch))
            out[way]["wall"].append(1000 * wall / len(batch))
            if server is not None and after is not None:
                out[way]["db_cpu"].append(1000 * (after - server) / len(batch))
    for e, _ in ways.values():
        e.dispose()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--db", help="a PostgreSQL or SQLite URL (an empty database)")
    where.add_argument("--pg-temp", action="store_true", help="start a throwaway PostgreSQL")
    parser.add_argument("--tokens", type=int, default=10000)
    parser.add_argument("--providers", type=int, default=1000)
    parser.add_argument("--misses", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the results here too")
    args = parser.parse_args(argv)
    pg = TempPostgres() if args.pg_temp else None
    with tempfile.TemporaryDirectory(prefix="token-miss-") as tmp:
        try:
            url = pg.start() if pg else args.db or f"sqlite:///{Path(tmp) / 'lakeshore.db'}"
            results = measure(args, url)
        finally:
            if pg:
                pg.stop()
    print(f"{args.misses} misses x {args.rounds} rounds, {args.tokens} tokens, per miss (median):")
    for way, r in results.items():
        line = f"  {way:<18} {statistics.median(r['cpu']):.3f} ms CPU, "
        line += f"{statistics.median(r['wall']):.3f} ms wall"
        if r["db_cpu"]:
            line += f", database {statistics.median(r['db_cpu']):.3f} ms CPU"
        if r["round_trips"] is not None:
            trips = r["round_trips"]
            line += f", {trips} round trip{'' if trips == 1 else 's'}"
        print(line)
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": None}, **results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
