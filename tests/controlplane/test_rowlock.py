"""Acknowledged writes are never overwritten: sixteen concurrent read-modify-write
requests on one row, against a real ``lakeshore serve`` on SQLite and on PostgreSQL,
each answered 200, and afterwards the row holds every one of them."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

from lakeshore_fixtures import ServerProc

SHARES_SERVER = True  # its tests keep to namespaces of their own: the session's server

WRITERS = 16


def _call(server: ServerProc, token: str, method: str, path: str, body: Any) -> tuple[int, Any]:
    req = urllib.request.Request(server.url + path, data=json.dumps(body).encode(), method=method)
    req.add_header("Content-Type", "application/json")
    req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def _all_at_once(server: ServerProc, token: str, calls: list[tuple[str, str, Any]]) -> list[Any]:
    """Send every call at once (one thread each, released together)."""
    gate = threading.Barrier(len(calls))
    out: list[Any] = [None] * len(calls)

    def one(i: int) -> None:
        gate.wait()
        out[i] = _call(server, token, *calls[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return out


def _namespace(server: ServerProc, tag: str) -> tuple[str, str]:
    import secrets

    ns = f"rmw-{tag}-{secrets.token_hex(3)}"
    server.admin.create_namespace(ns)
    return ns, server.admin.create_token(ns)


def test_sixteen_kwargs_patches_all_land(server: ServerProc) -> None:
    ns, token = _namespace(server, "prov")
    p = f"/api/namespaces/{ns}/providers"
    body = {"name": "x", "launcher": "EC2", "kwargs": {"region": "r"}}
    assert _call(server, token, "POST", p, body)[0] == 201
    for rnd in range(3):
        calls = [
            ("PATCH", p + "/x", {"kwargsPatch": {f"k{i}": rnd * 100 + i}}) for i in range(WRITERS)
        ]
        answers = _all_at_once(server, token, calls)
        assert [a[0] for a in answers] == [200] * WRITERS, answers
        row = server.admin.request("GET", f"{p}/x")
        want = {f"k{i}": rnd * 100 + i for i in range(WRITERS)}
        got = {k: v for k, v in row["kwargs"].items() if k.startswith("k")}
        assert got == want, f"round {rnd}: lost {sorted(set(want.items()) - set(got.items()))}"
        assert row["kwargs"]["region"] == "r"


def test_sixteen_mode_patches_all_land(server: ServerProc) -> None:
    ns, token = _namespace(server, "mode")
    p = f"/api/namespaces/{ns}/modes"
    status, out = _call(server, token, "POST", p, {"name": "m", "provider": "x", "env": {}})
    assert status == 201, out
    calls = [("PATCH", p + "/m", {"env": {f"E{i}": str(i)}}) for i in range(WRITERS)]
    answers = _all_at_once(server, token, calls)
    assert [a[0] for a in answers] == [200] * WRITERS, answers
    row = server.admin.request("GET", f"{p}/m")
    assert row["env"] == {f"E{i}": str(i) for i in range(WRITERS)}, row


def test_sixteen_queue_patches_and_price_tables_each_land_whole(server: ServerProc) -> None:
    ns, token = _namespace(server, "q")
    base = f"/api/namespaces/{ns}"
    body = {"name": "x", "launcher": "EC2", "kwargs": {"region": "r"}}
    assert _call(server, token, "POST", base + "/providers", body)[0] == 201
    status, out = _call(server, token, "POST", base + "/queues", {"name": "q", "provider": "x"})
    assert status in (200, 201), out
    calls = [("PATCH", base + "/queues/q", {"max": i + 1}) for i in range(WRITERS)]
    answers = _all_at_once(server, token, calls)
    assert [a[0] for a in answers] == [200] * WRITERS, answers
    # a fresh namespace's first price table, sixteen times at once: none is a 500,
    # and the table read afterwards is one of those answered 200, whole
    tables = [{"prices": {"*": {f"o{i}": float(i)}}} for i in range(WRITERS)]
    answers = _all_at_once(server, token, [("PUT", base + "/capacity/prices", t) for t in tables])
    assert {a[0] for a in answers} <= {200, 409}, answers
    ok = [tables[i]["prices"] for i, a in enumerate(answers) if a[0] == 200]
    assert ok
    final = server.admin.request("GET", base + "/capacity/prices")["prices"]
    assert final in ok, final
