"""The hot path (controlplane/server/fleet/hotpath.py) against a real ``lakeshore serve``
on both databases: it answers exactly what the routes answer, hands a poll to the
route when work comes, claims nothing for a daemon that went away, and falls
through whenever it does not know enough."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
import time
import urllib.request
import uuid
from typing import Any
from urllib.parse import urlparse

from dreamlake.controlplane.client import Client
from lakeshore_fixtures import ServerProc, wait_until

SHARES_SERVER = True  # its tests keep to names of their own: the session's server


def _http(
    server: ServerProc, token: str, method: str, path: str, body: bytes | None = None
) -> tuple[int, dict[str, str], Any]:
    url = urlparse(server.url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    headers = {"Authorization": f"Bearer {token}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, json.loads(data or b"null")


def _held(server: ServerProc) -> float:
    """``lakeshore_long_polls_held`` as the server says now."""
    req = urllib.request.Request(server.url + "/metrics")
    req.add_header("Authorization", f"Bearer {server.admin_token}")
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
    (line,) = [x for x in text.splitlines() if x.startswith("lakeshore_long_polls_held ")]
    return float(line.split()[-1])


def _worker(c: Client, provider: str = "lab") -> tuple[str, str]:
    reg = c.register(provider, f"i-{uuid.uuid4().hex[:6]}")
    assert c.poll_work(reg["workerId"], wait=0) is None  # known empty from here on
    return reg["workerId"], f"/api/namespaces/{c.namespace}/workers/{reg['workerId']}"


def test_heartbeat_answers_what_the_route_answers(
    server: ServerProc, fresh_namespace: tuple[str, Client]
) -> None:
    _ns, c = fresh_namespace
    assert c.token
    wid, base = _worker(c)
    fast = _http(server, c.token, "POST", f"{base}/heartbeat")
    daemons = _http(server, c.token, "POST", f"{base}/heartbeat", b"{}")  # as the client sends
    # another body, or a query parameter, sends the same heartbeat through the route
    routed = _http(server, c.token, "POST", f"{base}/heartbeat", b'{"a": 1}')
    replayed = _http(server, c.token, "POST", f"{base}/heartbeat", b"[]")  # read here, then routed
    queried = _http(server, c.token, "POST", f"{base}/heartbeat?x=1")
    for status, headers, out in (fast, daemons, routed, replayed, queried):
        assert status == 200
        assert headers["content-type"] == "application/json"
        assert headers["server-timing"].startswith("app;dur=")
        assert set(out) == {"workerId", "lastSeen", "heartbeatSeconds", "liveSeconds"}
        assert out["workerId"] == wid
    assert fast[2]["lastSeen"] < daemons[2]["lastSeen"] < routed[2]["lastSeen"]
    assert routed[2]["lastSeen"] < queried[2]["lastSeen"]
    assert {k: v for k, v in fast[2].items() if k != "lastSeen"} == {
        k: v for k, v in routed[2].items() if k != "lastSeen"
    }
    assert fast[2]["lastSeen"].endswith("Z") == routed[2]["lastSeen"].endswith("Z")
    claims = c.claims("lab")["instances"]
    assert [i["state"] for i in claims] == ["active"]


def test_unknown_worker_and_revoked_token_fall_through(
    server: ServerProc, fresh_namespace: tuple[str, Client]
) -> None:
    ns, c = fresh_namespace
    assert c.token
    wid, base = _worker(c)
    status, _h, out = _http(
        server, c.token, "POST", f"/api/namespaces/{ns}/workers/{uuid.uuid4()}/heartbeat"
    )
    assert status == 404 and out["error"] == "not_found"
    status, _h, out = _http(server, c.token, "GET", f"{base}/work?wait=-1")
    assert status == 422  # FastAPI's own validation, not the hot path's guess
    token = server.admin.create_token(ns, label="hot")
    other = server.client(token, namespace=ns)
    assert other.heartbeat(wid)["workerId"] == wid  # its access is cached now
    assert _http(server, token, "POST", f"{base}/heartbeat")[0] == 200
    row = next(r for r in server.admin.request("GET", "/api/tokens") if r["label"] == "hot")
    server.admin.request("DELETE", f"/api/tokens/{row['id']}")
    status, _h, out = _http(server, token, "POST", f"{base}/heartbeat")
    assert status == 401 and out["error"] == "unauthorized"
    assert _http(server, token, "GET", f"{base}/work?wait=1")[0] == 401
    assert _http(server, "not-a-token", "POST", f"{base}/heartbeat")[0] == 401
    # two tokens, the good one last: the gate reads the first and refuses; the hot
    # path, which could have read the other, leaves it to the gate
    assert _http(server, c.token, "POST", f"{base}/heartbeat")[0] == 200  # access cached
    url = urlparse(server.url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    conn.putrequest("POST", f"{base}/heartbeat")
    conn.putheader("Authorization", "Bearer not-a-token")
    conn.putheader("Authorization", f"Bearer {c.token}")
    conn.putheader("Content-Length", "0")
    conn.endheaders()
    assert conn.getresponse().status == 401
    conn.close()


def test_a_poll_waits_then_answers_204(
    server: ServerProc, fresh_namespace: tuple[str, Client]
) -> None:
    _ns, c = fresh_namespace
    assert c.token
    _wid, base = _worker(c)
    t = time.monotonic()
    status, headers, out = _http(server, c.token, "GET", f"{base}/work?wait=0.6")
    took = time.monotonic() - t
    assert status == 204 and out is None
    assert 0.55 <= took < 5
    assert float(headers["server-timing"].removeprefix("app;dur=")) >= 550


def test_work_submitted_during_a_poll_is_handed_to_it(
    server: ServerProc, fresh_namespace: tuple[str, Client]
) -> None:
    _ns, c = fresh_namespace
    assert c.token
    wid, base = _worker(c)
    got: dict[str, Any] = {}

    def poll() -> None:
        got["t0"] = time.monotonic()
        got["answer"] = _http(server, c.token or "", "GET", f"{base}/work?wait=20")
        got["t1"] = time.monotonic()

    poller = threading.Thread(target=poll)
    poller.start()
    time.sleep(0.5)
    item = c.submit_work("lab", "true")
    poller.join(25)
    status, _h, out = got["answer"]
    assert status == 200 and out["id"] == item["id"] and out["workerId"] == wid
    assert got["t1"] - got["t0"] < 10  # woken, not timed out
    assert c.get_work(item["id"])["state"] == "running"


def test_a_daemon_that_went_away_claims_nothing(
    server: ServerProc, fresh_namespace: tuple[str, Client]
) -> None:
    _ns, c = fresh_namespace
    assert c.token
    _wid, base = _worker(c)
    url = urlparse(server.url)
    before = _held(server)
    sock = socket.create_connection((url.hostname or "127.0.0.1", url.port or 0))
    sock.sendall(
        f"GET {base}/work?wait=20 HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {c.token}\r\n\r\n".encode()
    )
    assert wait_until(lambda: _held(server) > before, 30, 0.2)  # the poll is held
    sock.close()
    assert wait_until(lambda: _held(server) <= before, 30, 0.2)  # the server saw it go
    item = c.submit_work("lab", "true")
    time.sleep(1.0)
    assert c.get_work(item["id"])["state"] == "queued"
    # a live poll takes it
    second = c.poll_work(_wid, wait=5)
    assert second is not None and second["id"] == item["id"]
    assert wait_until(lambda: c.get_work(item["id"])["state"] == "running", 5)


# -- in process: which requests the hot path answers itself --------------------------


class _Routes:
    """Stands where FastAPI's routes are: records what reached it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bytes]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.calls.append((scope["path"], scope.get("query_string", b"")))
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def _state() -> Any:
    from types import SimpleNamespace

    from dreamlake.controlplane.server.access.tokens import hash_token
    from dreamlake.controlplane.server.deps import Access, Caller, TokenCache
    from dreamlake.controlplane.server.fleet.heartbeats import Heartbeats
    from dreamlake.controlplane.server.fleet.notify import Notifier
    from dreamlake.controlplane.server.fleet.queued import QueueHints

    hb = Heartbeats(None, 3600)  # type: ignore[arg-type]
    hb._task = object()  # type: ignore[assignment]  # "running": the writer is not needed here
    cache = TokenCache()
    ns = SimpleNamespace(id=7, name="lab")
    cache.put((hash_token("tok"), "lab"), Access(Caller(1, False, 7), ns, (7,)))  # type: ignore[arg-type]
    # an org sibling's token: it reads this namespace and may not act for its workers
    sibling = Access(Caller(2, False, 8), ns, (7, 8), own=False)  # type: ignore[arg-type]
    cache.put((hash_token("sib"), "lab"), sibling)
    hints, notifier = QueueHints(), Notifier()
    notifier.on_key(hints.on_key)
    return SimpleNamespace(
        token_cache=cache,
        heartbeats=hb,
        queue_hints=hints,
        notifier=notifier,
        settings=SimpleNamespace(heartbeat_seconds=10.0, live_seconds=30.0),
    )


async def _call(
    app: Any,
    method: str,
    path: str,
    query: bytes = b"",
    body: bytes = b"",
    first: bytes = b"Bearer tok",
    **hdr: bytes,
) -> list[Any]:
    headers = [(b"authorization", first), *((k.encode(), v) for k, v in hdr.items())]
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query,
        "headers": headers,
    }
    sent: list[Any] = []
    read = 0

    async def receive() -> dict[str, Any]:
        nonlocal read
        read += 1
        if read > 1:  # as a server does: the next message is the client going away
            await asyncio.sleep(3600)
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def test_in_process_what_is_answered_and_what_falls_through() -> None:
    from dreamlake.controlplane.server.fleet.hotpath import HotPath

    async def run() -> None:
        routes, state = _Routes(), _state()
        app = HotPath(routes, state)
        wid = str(uuid.uuid4())
        base = f"/api/namespaces/lab/workers/{wid}"
        # unknown worker: the route answers (and would learn it)
        assert (await _call(app, "POST", f"{base}/heartbeat"))[0]["status"] == 299
        state.heartbeats.know(wid, 7, "p1")
        sent = await _call(app, "POST", f"{base}/heartbeat")
        assert sent[0]["status"] == 200 and len(routes.calls) == 1
        assert json.loads(sent[1]["body"])["workerId"] == wid
        # the empty object the daemon's client sends: answered here too
        two = {"content-length": b"2"}
        sent = await _call(app, "POST", f"{base}/heartbeat", body=b"{}", **two)
        assert sent[0]["status"] == 200 and len(routes.calls) == 1
        # another body, a query, another namespace, an unknown token: the route
        await _call(app, "POST", f"{base}/heartbeat", body=b"[]", **two)
        await _call(app, "POST", f"{base}/heartbeat", body=b"{ }", **{"content-length": b"3"})
        await _call(app, "POST", f"{base}/heartbeat", **{"transfer-encoding": b"chunked"})
        await _call(app, "POST", f"{base}/heartbeat", b"x=1")
        await _call(app, "POST", f"/api/namespaces/other/workers/{wid}/heartbeat")
        await _call(app, "POST", f"{base}/heartbeat", authorization=b"Bearer nope")
        # two tokens, the known one last: the gate reads the first, so the route
        await _call(
            app, "POST", f"{base}/heartbeat", first=b"Bearer nope", authorization=b"Bearer tok"
        )
        assert len(routes.calls) == 8
        # a poll while the provider is not known empty: the route
        await _call(app, "GET", f"{base}/work", b"wait=0.2")
        assert len(routes.calls) == 9
        key = "work:7:p1"
        state.queue_hints.mark_empty(key, 0)
        sent = await _call(app, "GET", f"{base}/work", b"wait=0.2")
        assert sent[0]["status"] == 204 and len(routes.calls) == 9
        for bad in (b"wait=0", b"wait=-1", b"wait=61", b"wait=x", b"wait=1&wait=2", b""):
            await _call(app, "GET", f"{base}/work", bad)
        await _call(app, "GET", f"{base}/work", b"wait=0.2", body=b"{}", **two)  # a body
        assert len(routes.calls) == 16
        # an org sibling's token: the route (whose gate refuses it), for both
        sib = {"authorization": b"Bearer sib"}
        await _call(app, "POST", f"{base}/heartbeat", **sib)
        await _call(app, "POST", f"{base}/heartbeat", body=b"{}", **two, **sib)
        await _call(app, "GET", f"{base}/work", b"wait=0.2", **sib)
        assert len(routes.calls) == 19
        # a wake-up mid-wait hands the poll to the route with the wait that is left
        poll = asyncio.ensure_future(_call(app, "GET", f"{base}/work", b"wait=5"))
        await asyncio.sleep(0.2)
        state.notifier.fire(key)
        await asyncio.wait_for(poll, 2)
        path, query = routes.calls[-1]
        assert path == f"{base}/work" and 4.0 < float(query.removeprefix(b"wait=")) < 5.0

    asyncio.run(run())


def test_long_idle_polls_end_a_little_early_at_random() -> None:
    from dreamlake.controlplane.server.routes.workers import poll_deadline

    now = time.monotonic()
    assert all(now + 2.0 <= poll_deadline(2.0) <= time.monotonic() + 2.0 for _ in range(50))
    ends = [poll_deadline(20.0) - time.monotonic() for _ in range(200)]
    assert all(17.9 <= e <= 20.0 for e in ends)
    assert max(ends) - min(ends) > 1.0  # spread: a herd does not stay in step
