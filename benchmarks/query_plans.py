"""The hot look-ups of the daemons' and the fleet's paths on a migrated SQLite
database of a fleet's size, with the composite indexes of ``0201_hot_indexes`` and
``0111_capacity_lease_states`` and without them (dropped: the schema before them).

For each side: SQLite's ``EXPLAIN QUERY PLAN`` of the statements the code sends
(revoking a provider's daemon tokens, a poll's claim, a re-registration's lost
runs, a claim's lease check), and the CPU time of N tokens minted for a host as
``create_token`` mints them (the real ``daemon_tokens.revoke``, then the new row,
one commit each); with ``--http`` also through the real route
(``POST /api/namespaces/default/tokens``, the app in process, FastAPI's TestClient:
the client's share is in the figure).

    .venv/bin/python benchmarks/query_plans.py [--providers 1000] [--tokens 20000]
        [--workers 10000] [--items 50000] [--calls 2000] [--http] [--json F]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

NEW_INDEXES = (
    "ix_tokens_namespace_provider_host",
    "ix_work_items_by_state",
    "ix_work_items_worker",
    "ix_capacity_leases_namespace_state",
)
ADMIN = "benchmark-admin-token"


def _ts(value: Any) -> str:
    return str(value.strftime("%Y-%m-%d %H:%M:%S.%f"))


def build(path: Path, args: argparse.Namespace) -> None:
    """A database made by the real migrations, then filled: per daemon a spent
    bootstrap token and its live certificate, a worker, and work items (93%
    succeeded, 2% failed, 3% running, 2% queued), over one namespace."""
    from dreamlake.controlplane import db
    from dreamlake.controlplane.server.access.tokens import hash_token

    engine = db.make_engine(f"sqlite:///{path}")
    db.upgrade_with_alembic(engine)
    now = db.utcnow().replace(tzinfo=None)
    rnd = random.Random(7)
    daemons = args.tokens // 2
    with engine.begin() as c:
        c.exec_driver_sql(
            "INSERT INTO namespaces (id, name, created_at) VALUES (1, 'default', ?)", (_ts(now),)
        )
        tokens: list[tuple[Any, ...]] = [
            (1, hash_token(ADMIN), None, 1, "admin", _ts(now), None, "admin", None, None, None)
        ]
        for i in range(daemons):
            p, h = f"p{i % args.providers}", f"host-{i}"
            spent = (2 * i + 2, uuid.uuid4().hex * 2, 1, 0, "bootstrap", _ts(now), _ts(now))
            tokens.append((*spent, "bootstrap", p, h, None))
            cert = (2 * i + 3, uuid.uuid4().hex * 2, 1, 0, f"cert {i:x}", _ts(now), None)
            tokens.append((*cert, "daemon", p, h, 2 * i + 2))
        c.exec_driver_sql(
            "INSERT INTO tokens (id, token_hash, namespace_id, admin, label, created_at, "
            "revoked_at, scope, provider_name, host, root_token_id) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            tokens,
        )
        workers = [
            (str(uuid.uuid4()), f"p{i % args.providers}", f"i-{i}", f"host-{i}", 2 * i + 3)
            for i in range(min(args.workers, daemons))
        ]
        c.exec_driver_sql(
            "INSERT INTO workers (id, namespace_id, provider_name, instance_id, host, queues, "
            "version, registered_at, last_seen, token_id) VALUES (?,1,?,?,?,'[]','',?,?,?)",
            [(w, p, i, h, _ts(now), _ts(now), t) for w, p, i, h, t in workers],
        )
        items = []
        for i in range(args.items):
            wid, provider = workers[i % len(workers)][:2]
            r = rnd.random()
            state = (
                "succeeded"
                if r < 0.93
                else "failed"
                if r < 0.95
                else "running"
                if r < 0.98
                else "queued"
            )
            made = _ts(now - timedelta(seconds=args.items - i))
            done = made if state in ("succeeded", "failed") else None
            mine = None if state == "queued" else wid
            items.append((str(uuid.uuid4()), provider, state, mine, made, done))
        c.exec_driver_sql(
            "INSERT INTO work_items (id, namespace_id, provider_name, command, state, "
            "worker_id, created_at, finished_at) VALUES (?,1,?,'true',?,?,?,?)",
            items,
        )
    engine.dispose()


def plans(engine: Any, worker_id: str) -> dict[str, list[str]]:
    """EXPLAIN QUERY PLAN of what the real functions send (caught on the way)."""
    from dreamlake.controlplane import db
    from dreamlake.controlplane.models import Worker
    from dreamlake.controlplane.server import store
    from dreamlake.controlplane.server.access import daemon_tokens
    from dreamlake.controlplane.server.schemas import WorkerIn
    from sqlalchemy import event

    calls: dict[str, Any] = {
        "revoke (provider, host)": lambda s, w: daemon_tokens.revoke(s, 1, "p5", host="host-5"),
        "revoke (provider)": lambda s, w: daemon_tokens.revoke(s, 1, "p5"),
        "poll: claim": lambda s, w: store.try_claim(s, w),
        "poll: any queued": lambda s, w: store.any_queued(s, 1, w.provider_name),
        "claim: lease check": lambda s, w: store.leased(s, w),
        "register again": lambda s, w: store.register(
            s, 1, WorkerIn(provider_name=w.provider_name, instance_id=w.instance_id)
        ),
    }
    out: dict[str, list[str]] = {}
    for name, call in calls.items():
        sent: list[Any] = []

        def catch(
            _c: Any, _cur: Any, sql: str, params: Any, _x: Any, _m: bool, sent: list[Any] = sent
        ) -> None:
            if sql.startswith(("SELECT", "UPDATE")) and "WHERE" in sql:
                sent.append((sql, params))

        with db.make_sessionmaker(engine)() as session:
            worker = session.get(Worker, worker_id)
            event.listen(engine, "before_cursor_execute", catch)
            try:
                call(session, worker)
            finally:
                event.remove(engine, "before_cursor_execute", catch)
                session.rollback()
        with engine.connect() as conn:
            out[name] = [
                f"{sql.split()[0]} … {row[3]}"
                for sql, params in sent
                for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params)
                if "CONSTANT ROW" not in str(row[3]) and "SUBQUERY" not in str(row[3])
            ]
    return out


def mints(engine: Any, calls: int, providers: int) -> dict[str, float]:
    """``calls`` tokens minted for a host as ``create_token`` mints them."""
    from dreamlake.controlplane import db
    from dreamlake.controlplane.models import Token
    from dreamlake.controlplane.server.access import daemon_tokens
    from dreamlake.controlplane.server.access.tokens import hash_token, new_token

    make = db.make_sessionmaker(engine)
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(calls):
        p, h = f"p{i % providers}", f"host-{i}"
        with make() as s:
            daemon_tokens.revoke(s, 1, p, host=h)
            row = Token(token_hash=hash_token(new_token()), namespace_id=1, admin=False)
            row.scope, row.provider_name, row.host = "bootstrap", p, h
            s.add(row)
            s.commit()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"cpu_ms_per_call": 1000 * cpu / calls, "wall_ms_per_call": 1000 * wall / calls}


def route(path: Path, data: Path, calls: int, providers: int) -> dict[str, float]:
    """``calls`` bootstrap tokens for a host through the real route."""
    from dreamlake.controlplane.server.app import create_app
    from dreamlake.controlplane.server.settings import Settings
    from fastapi.testclient import TestClient

    app = create_app(Settings(data_dir=data, db_url=f"sqlite:///{path}"))
    headers = {"Authorization": f"Bearer {ADMIN}"}
    try:
        with TestClient(app) as client:
            cpu, wall = time.process_time(), time.perf_counter()
            for i in range(calls):
                body = {"scope": "bootstrap", "provider": f"p{i % providers}", "host": f"host-{i}"}
                answer = client.post("/api/namespaces/default/tokens", headers=headers, json=body)
                assert answer.status_code == 201, answer.text
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        app.state.engine.dispose()
    return {"cpu_ms_per_call": 1000 * cpu / calls, "wall_ms_per_call": 1000 * wall / calls}


def side(base: Path, tmp: Path, name: str, args: argparse.Namespace) -> dict[str, Any]:
    from dreamlake.controlplane import db

    path = tmp / f"{name}.db"
    shutil.copy(base, path)
    engine = db.make_engine(f"sqlite:///{path}")
    if name == "before":
        with engine.begin() as c:
            for index in NEW_INDEXES:
                c.exec_driver_sql(f"DROP INDEX {index}")
    with engine.connect() as c:
        worker_id = c.exec_driver_sql(
            "SELECT worker_id FROM work_items WHERE state = 'running' LIMIT 1"
        ).scalar_one()
    out: dict[str, Any] = {"plans": plans(engine, worker_id)}
    out["mint"] = mints(engine, args.calls, args.providers)
    engine.dispose()
    if args.http:
        shutil.copy(base, path)
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        if name == "before":
            engine = db.make_engine(f"sqlite:///{path}")
            with engine.begin() as c:
                for index in NEW_INDEXES:
                    c.exec_driver_sql(f"DROP INDEX {index}")
            engine.dispose()
        out["route"] = route(path, tmp / f"data-{name}", args.calls, args.providers)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--providers", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=10000)
    parser.add_argument("--items", type=int, default=50000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--http", action="store_true", help="also through the real route")
    parser.add_argument("--json", type=Path, help="write the results here too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="query-plans-") as tmp_name:
        tmp = Path(tmp_name)
        base = tmp / "base.db"
        build(base, args)
        results = {name: side(base, tmp, name, args) for name in ("before", "after")}
    for name, result in results.items():
        print(f"== {name}")
        for query, steps in result["plans"].items():
            print(f"  {query}:")
            for step in steps:
                print(f"      {step}")
        for kind in ("mint", "route"):
            if kind in result:
                r = result[kind]
                print(
                    f"  {kind} x{args.calls}: {r['cpu_ms_per_call']:.2f} ms CPU, "
                    f"{r['wall_ms_per_call']:.2f} ms wall per call"
                )
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": None}, **results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
