"""The lakeshore HTTP API against a real server subprocess (SQLite, and PostgreSQL
when available): health, auth and namespace scoping, error shapes and limits,
workers / heartbeats / claims, and work submission through the client."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure, Client, Unreachable
from lakeshore_fixtures import LIVE_SECONDS, ServerProc, clean_env, lakeshore_argv, wait_until

SHARES_SERVER = True  # its tests keep to names of their own: the session's server


def raw(
    server: ServerProc,
    method: str,
    path: str,
    body: bytes | None = None,
    token: str | None = None,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    req = urllib.request.Request(server.url + path, data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", content_type)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            data = r.read()
            return r.status, json.loads(data) if data else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_healthz(server: ServerProc, lakeshore_backend: str) -> None:
    status, body = raw(server, "GET", "/healthz")
    assert status == 200
    assert body["status"] == "ok"
    assert body["database"] == ("sqlite" if lakeshore_backend == "sqlite" else "postgresql")


def test_admin_token_file_is_private(server: ServerProc) -> None:
    mode = (server.data_dir / "admin.token").stat().st_mode & 0o777
    assert mode == 0o600
    assert server.admin.whoami() == {"admin": True, "namespace": None}


def test_missing_and_wrong_token_are_401(server: ServerProc) -> None:
    status, body = raw(server, "GET", "/api/namespaces/default/providers/x/claims")
    assert status == 401 and body["error"] == "unauthorized" and "bearer" in body["detail"]
    status, body = raw(
        server, "GET", "/api/namespaces/default/providers/x/claims", token="lks_nope"
    )
    assert status == 401 and body["detail"] == "unknown or revoked token"
    assert body["error"] == body["kind"] == "unauthorized"


def test_token_of_one_namespace_cannot_read_another(server: ServerProc) -> None:
    admin = server.admin
    admin.create_namespace("team-a")
    admin.create_namespace("team-b")
    token_a = admin.create_token("team-a")
    token_b = admin.create_token("team-b")
    b = server.client(token_b, "team-b")
    b.register("shared", "i-b")
    a_on_b = server.client(token_a, "team-b")
    with pytest.raises(ApiFailure) as err:
        a_on_b.claims("shared")
    assert err.value.status in (403, 404)
    with pytest.raises(ApiFailure) as err:
        a_on_b.register("shared", "i-a")
    assert err.value.status in (403, 404)
    # its own namespace works, and sees none of B's workers
    assert server.client(token_a, "team-a").claims("shared")["live"] == 0
    assert b.claims("shared")["live"] == 1
    # a namespace token is not an admin token
    with pytest.raises(ApiFailure) as err:
        server.client(token_a).create_namespace("team-c")
    assert err.value.status == 403


def test_org_siblings_share_a_token(server: ServerProc) -> None:
    admin = server.admin
    admin.create_namespace("org-one", org_id="acme")
    admin.create_namespace("org-two", org_id="acme")
    admin.create_namespace("org-other", org_id="globex")
    token = admin.create_token("org-one")
    assert server.client(token, "org-two").claims("p")["live"] == 0
    with pytest.raises(ApiFailure) as err:
        server.client(token, "org-other").claims("p")
    assert err.value.status == 403


def test_unknown_namespace_is_404_for_admin(server: ServerProc) -> None:
    with pytest.raises(ApiFailure) as err:
        server.client(server.admin_token, "no-such-ns").claims("p")
    assert err.value.status == 404 and err.value.error == "not_found"


def test_duplicate_namespace_is_409(server: ServerProc) -> None:
    server.admin.create_namespace("dup")
    with pytest.raises(ApiFailure) as err:
        server.admin.create_namespace("dup")
    assert err.value.status == 409


def test_racing_namespace_creations_are_one_201_and_409s(server: ServerProc) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def make(name: str) -> int:
        try:
            server.admin.create_namespace(name)
            return 201
        except ApiFailure as exc:
            return exc.status

    for k in range(5):
        with ThreadPoolExecutor(16) as pool:
            statuses = list(pool.map(make, [f"race-{k}"] * 16))
        assert sorted(set(statuses)) == [201, 409] and statuses.count(201) == 1, statuses


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        json.dumps({"providerName": "Bad Name", "instanceId": "i-1"}).encode(),
        json.dumps({"instanceId": "i-1"}).encode(),
        json.dumps({"providerName": "ok", "instanceId": "i-1", "surprise": 1}).encode(),
        json.dumps({"providerName": "ok", "instanceId": "i-1", "queues": "gpu"}).encode(),
    ],
)
def test_bad_bodies_are_422_json(server: ServerProc, body: bytes) -> None:
    status, out = raw(server, "POST", "/api/namespaces/default/workers", body, server.admin_token)
    assert status == 422
    assert out["error"] == "validation_error"
    assert isinstance(out["detail"], str) and out["detail"].startswith("the request is not valid")
    assert isinstance(out["errors"], list) and out["errors"]
    assert {"loc", "msg", "type"} <= set(out["errors"][0])


def test_bad_query_is_422(server: ServerProc) -> None:
    wid = server.admin.register("q-check", "i-1")["workerId"]
    status, out = raw(
        server,
        "GET",
        f"/api/namespaces/default/workers/{wid}/work?wait=999",
        token=server.admin_token,
    )
    assert status == 422 and out["error"] == "validation_error"


def test_oversized_body_is_413(server: ServerProc) -> None:
    body = json.dumps({"command": "x" * (2 * 1024 * 1024)}).encode()
    status, out = raw(
        server, "POST", "/api/namespaces/default/providers/p/work", body, server.admin_token
    )
    assert status == 413 and out["error"] == "payload_too_large"


def test_unknown_worker_and_work_are_404(server: ServerProc) -> None:
    admin = server.admin
    with pytest.raises(ApiFailure) as err:
        admin.heartbeat("no-such-worker")
    assert err.value.status == 404
    with pytest.raises(ApiFailure) as err:
        admin.get_work("no-such-work")
    assert err.value.status == 404
    status, out = raw(server, "GET", "/api/nothing-here")
    assert status == 404 and out["error"] == "not_found"


def test_register_heartbeat_claims_deregister(fresh_namespace: tuple[str, Client]) -> None:
    _ns, c = fresh_namespace
    assert c.claims("lab") == {"live": 0, "gone": 0, "instances": []}
    reg = c.register("lab", "i-1", host="host-1", queues=["gpu", "cpu"], version="0.1.0")
    assert reg["liveSeconds"] == LIVE_SECONDS and reg["heartbeatSeconds"] > 0
    claims = c.claims("lab")
    assert claims["live"] == 1 and claims["gone"] == 0
    inst = claims["instances"][0]
    assert inst["instanceId"] == "i-1" and inst["host"] == "host-1"
    assert inst["state"] == "joining" and inst["queues"] == ["gpu", "cpu"]
    assert c.poll_work(reg["workerId"], wait=0) is None  # asking for work makes it active
    assert c.claims("lab")["instances"][0]["state"] == "active"
    # re-registering the same instance keeps one row
    again = c.register("lab", "i-1", host="host-1", queues=["gpu"])
    assert again["workerId"] == reg["workerId"]
    assert c.claims("lab")["live"] == 1
    c.heartbeat(reg["workerId"])
    c.deregister(reg["workerId"])
    assert c.claims("lab") == {"live": 0, "gone": 1, "instances": []}
    with pytest.raises(ApiFailure) as err:
        c.heartbeat(reg["workerId"])
    assert err.value.status == 404


def test_racing_registrations_of_one_instance_all_succeed(
    fresh_namespace: tuple[str, Client],
) -> None:
    """The same instance registering from several requests at once (a retried
    register, a restarted daemon) ends with one worker, never a 500."""
    from concurrent.futures import ThreadPoolExecutor

    _ns, c = fresh_namespace

    def reg(i: int) -> int | str:
        try:
            return str(c.register("same", f"host-{i // 16}")["workerId"])
        except ApiFailure as exc:
            return exc.status

    with ThreadPoolExecutor(16) as pool:
        out = list(pool.map(reg, range(160)))
    assert all(isinstance(x, str) for x in out), sorted({x for x in out if not isinstance(x, str)})
    workers = c.workers("same")
    assert len(workers) == 10 and len({w["instanceId"] for w in workers}) == 10


def test_live_becomes_gone_after_the_bound_and_back(fresh_namespace: tuple[str, Client]) -> None:
    _ns, c = fresh_namespace
    wid = c.register("fade", "i-1")["workerId"]
    c.register("fade", "i-2")
    assert c.claims("fade")["live"] == 2
    # keep i-1 beating; let i-2 go silent past the bound
    end = time.monotonic() + LIVE_SECONDS + 1.0
    while time.monotonic() < end:
        c.heartbeat(wid)
        time.sleep(0.3)
    claims = c.claims("fade")
    assert (claims["live"], claims["gone"]) == (1, 1)
    assert [i["instanceId"] for i in claims["instances"]] == ["i-1"]
    # a heartbeat after the bound brings it back
    c.heartbeat(wid)
    assert c.claims("fade")["live"] == 1


def test_work_runs_through_poll_and_report(fresh_namespace: tuple[str, Client]) -> None:
    _ns, c = fresh_namespace
    gpu = c.register("jobs", "i-gpu", queues=["gpu"])["workerId"]
    cpu = c.register("jobs", "i-cpu", queues=["cpu"])["workerId"]
    item = c.submit_work("jobs", "exit 3", queue="gpu", timeout_seconds=30)
    assert item["state"] == "queued" and item["queue"] == "gpu"
    assert c.poll_work(cpu, wait=0) is None  # not its queue
    got = c.poll_work(gpu, wait=1)
    assert got is not None and got["id"] == item["id"] and got["state"] == "running"
    assert got["timeoutSeconds"] == 30
    assert c.poll_work(gpu, wait=0) is None  # handed out once
    done = c.report(gpu, item["id"], exit_code=3, output_tail="tail\n")
    assert done["state"] == "failed" and done["exitCode"] == 3
    out = c.get_work(item["id"])
    assert out["exitCode"] == 3 and out["outputTail"] == "tail\n" and out["finishedAt"]
    with pytest.raises(ApiFailure) as err:  # a second report is refused
        c.report(gpu, item["id"], exit_code=0)
    assert err.value.status == 409
    ok = c.submit_work("jobs", "true")  # no queue: any worker of the provider
    got = c.poll_work(cpu, wait=1)
    assert got is not None and got["id"] == ok["id"]
    assert c.report(cpu, ok["id"], exit_code=0)["state"] == "succeeded"


def test_long_poll_wakes_on_submit(fresh_namespace: tuple[str, Client]) -> None:
    import threading

    _ns, c = fresh_namespace
    wid = c.register("wake", "i-1")["workerId"]
    got: list[Any] = []
    t = threading.Thread(target=lambda: got.append(c.poll_work(wid, wait=10)))
    started = time.monotonic()
    t.start()
    time.sleep(0.5)
    item = c.submit_work("wake", "echo hi")
    t.join(timeout=15)
    assert got and got[0] is not None and got[0]["id"] == item["id"]
    assert time.monotonic() - started < 5


def test_waiting_for_a_result(fresh_namespace: tuple[str, Client]) -> None:
    import threading

    _ns, c = fresh_namespace
    wid = c.register("res", "i-1")["workerId"]
    item = c.submit_work("res", "echo hi")
    c.poll_work(wid, wait=1)
    threading.Timer(0.5, lambda: c.report(wid, item["id"], exit_code=0, output_tail="hi\n")).start()
    out = c.get_work(item["id"], wait=10)
    assert out["state"] == "succeeded" and out["outputTail"] == "hi\n"


def test_running_work_of_a_gone_worker_reads_lost(fresh_namespace: tuple[str, Client]) -> None:
    _ns, c = fresh_namespace
    wid = c.register("lost", "i-1")["workerId"]
    item = c.submit_work("lost", "sleep 100")
    assert c.poll_work(wid, wait=1) is not None
    assert wait_until(lambda: c.get_work(item["id"])["state"] == "lost", LIVE_SECONDS + 3)


def test_unreachable_client_error() -> None:
    from lakeshore_fixtures import free_port

    c = Client(f"http://127.0.0.1:{free_port()}", "t", timeout=2)
    with pytest.raises(Unreachable):
        c.claims("x")


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}",
        b"garbage that is no status line\r\n\r\n",
    ],
    ids=["truncated-body", "bad-status-line"],
)
def test_a_broken_answer_is_unreachable(reply: bytes) -> None:
    """A connection cut mid-answer is a transport failure like a refused one, not a
    stray http.client exception the callers do not expect."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(reply)

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        c = Client(f"http://127.0.0.1:{listener.getsockname()[1]}", "t", timeout=5)
        with pytest.raises(Unreachable):
            c.claims("x")
    finally:
        t.join(timeout=5)
        listener.close()


def test_cli_admin_path(server: ServerProc) -> None:
    env = clean_env()
    common = ["--server", server.url, "--data-dir", str(server.data_dir)]
    out = subprocess.run(
        [*lakeshore_argv(), "namespaces", "add", "cli-ns", "--org", "acme", *common],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "cli-ns" in out.stdout
    tok = subprocess.run(
        [*lakeshore_argv(), "tokens", "create", "--namespace", "cli-ns", *common],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert tok.returncode == 0, tok.stderr
    token = tok.stdout.strip()
    assert server.client(token, "cli-ns").whoami() == {"admin": False, "namespace": "cli-ns"}
    bad = subprocess.run(
        [*lakeshore_argv(), "tokens", "create", "--namespace", "nope", *common],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert bad.returncode == 1 and "404" in bad.stderr


def test_oversized_chunked_body_is_413(server: ServerProc) -> None:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    chunks = (b"x" * 65536 for _ in range(40))  # 2.5 MiB, no Content-Length
    # the server may answer and close before the client has sent it all
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        conn.request(
            "POST",
            "/api/namespaces/default/providers/p/work",
            body=chunks,
            headers={
                "Authorization": f"Bearer {server.admin_token}",
                "Content-Type": "application/json",
            },
            encode_chunked=True,
        )
    resp = conn.getresponse()
    assert resp.status == 413
    assert json.loads(resp.read())["error"] == "payload_too_large"
    conn.close()


def test_many_long_polls_do_not_exhaust_the_connection_pool(
    fresh_namespace: tuple[str, Client],
) -> None:
    """A waiting long-poll holds no database connection: more waiters than the pool
    has connections (8 + 16) all come back on time, and a heartbeat gets through."""
    from concurrent.futures import ThreadPoolExecutor

    _ns, c = fresh_namespace
    n = 30
    wids = [c.register("crowd", f"i-{i}")["workerId"] for i in range(n)]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=n) as pool:
        polls = [pool.submit(c.poll_work, wid, 3.0) for wid in wids]
        results = [p.result(timeout=30) for p in polls]
        jobs = [pool.submit(c.get_work, c.submit_work("nobody", "true")["id"], 3.0)]
    assert results == [None] * n
    assert jobs[0].result()["state"] == "queued"
    assert time.monotonic() - started < 15


def test_nul_characters_behave_alike_on_every_backend(
    fresh_namespace: tuple[str, Client],
) -> None:
    """PostgreSQL text cannot hold NUL, SQLite can: a NUL in a command or a worker
    field is a 422 on both (a 500 on one before), and a result whose output carries
    NUL bytes is taken with them shown as U+FFFD (a daemon retried it forever)."""
    _ns, c = fresh_namespace
    wid = c.register("nul", "i-1")["workerId"]
    for call in (
        lambda: c.submit_work("nul", "echo a\x00b"),
        lambda: c.register("nul", "i-2", host="h\x00"),
    ):
        with pytest.raises(ApiFailure) as err:
            call()
        assert err.value.status == 422 and "NUL" in json.dumps(err.value.detail)
    item = c.submit_work("nul", "printf 'a\\0b'")
    assert c.poll_work(wid, wait=1) is not None
    out = c.report(wid, item["id"], exit_code=0, output_tail="a\x00b", error=None)
    assert out["state"] == "succeeded" and out["outputTail"] == "a\ufffdb"
    with pytest.raises(ApiFailure) as err:
        c.report(wid, item["id"], exit_code=2**40)
    assert err.value.status == 422


def test_an_unexpected_error_names_its_type_not_its_text(tmp_path: Any) -> None:
    """A 500 says what kind of failure it was; its text (a database error's carries
    the SQL and the request's values) stays in the server log."""
    from dreamlake.controlplane.server.app import create_app
    from dreamlake.controlplane.server.settings import Settings
    from fastapi.testclient import TestClient

    app = create_app(Settings(data_dir=tmp_path))

    def boom() -> None:
        raise RuntimeError("[SQL: INSERT ...] [parameters: ('value-from-the-request',)]")

    app.add_api_route("/boom", boom)
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            r = client.get("/boom")
        assert r.status_code == 500
        assert r.json()["error"] == "internal_error" and "RuntimeError" in r.json()["detail"]
        assert "value-from-the-request" not in r.text
    finally:
        app.state.engine.dispose()


def test_registering_again_loses_only_a_run_that_was_running(
    fresh_namespace: tuple[str, Client],
) -> None:
    _ns, c = fresh_namespace
    wid = c.register("again", "i-1")["workerId"]
    assert c.register("again", "i-1")["workerId"] == wid  # nothing running: nothing lost
    item = c.submit_work("again", "sleep 100")
    assert c.poll_work(wid, wait=1) is not None
    assert c.get_work(item["id"])["state"] == "running"
    c.register("again", "i-1")  # a fresh process took the instance over
    out = c.get_work(item["id"])
    assert out["state"] == "lost" and "re-registered" in out["error"]


def _locked_once(engine: Any, prefix: str) -> list[str]:
    """Have SQLite's refusal, "database is locked", raised once for the first
    statement on ``engine`` that starts with ``prefix`` (where SQLite raised it under
    10,000 daemons; it gives it only under a race no test can set up on demand).
    Returns the list the refused statement is put in."""
    import sqlite3

    from sqlalchemy import event

    refused: list[str] = []

    @event.listens_for(engine, "before_cursor_execute")
    def locked_once(*args: object) -> None:  # conn, cursor, statement, ...
        statement = str(args[2])
        if statement.startswith(prefix) and not refused:
            refused.append(statement)
            raise sqlite3.OperationalError("database is locked")

    return refused


def test_a_write_sqlite_refuses_as_locked_is_a_503_to_retry_not_a_500(tmp_path: Any) -> None:
    """Under 10,000 daemons SQLite refused a few writes with "database is locked"
    within a second (inside its 30 s busy timeout), and they were answered 500. A
    submit refused so (raised here once, where SQLite raised it then) is a 503 with a
    Retry-After, and the same submit again goes through; another database error is
    still a 500."""
    import sqlite3

    from dreamlake.controlplane.server.app import create_app
    from dreamlake.controlplane.server.settings import Settings
    from fastapi.testclient import TestClient
    from sqlalchemy.exc import OperationalError

    app = create_app(Settings(data_dir=tmp_path))
    refused = _locked_once(app.state.engine, "INSERT INTO work_items")

    def other() -> None:
        raise OperationalError("SELECT 1", {}, sqlite3.OperationalError("disk I/O error"))

    app.add_api_route("/other", other)
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            headers = {"Authorization": f"Bearer {(tmp_path / 'admin.token').read_text().strip()}"}
            url = "/api/namespaces/default/providers/p/work"
            r = client.post(url, json={"command": "true"}, headers=headers)
            assert r.status_code == 503, r.text
            assert r.json()["error"] == "overloaded" and 1 <= int(r.headers["retry-after"]) <= 4
            assert refused
            assert client.post(url, json={"command": "true"}, headers=headers).status_code == 201
            assert client.get("/other").status_code == 500
    finally:
        app.state.engine.dispose()


def test_a_claim_sqlite_refuses_as_locked_is_a_503_and_the_item_stays_queued(
    tmp_path: Any,
) -> None:
    """The poll whose claim SQLite refused (raised here once, where SQLite raised it
    under 10,000 daemons) is a 503 the daemon retries after Retry-After; the claim's
    transaction is rolled back whole, so the item is still queued and the next poll
    gets it: nothing is claimed without its daemon being told."""
    from dreamlake.controlplane.server.app import create_app
    from dreamlake.controlplane.server.settings import Settings
    from fastapi.testclient import TestClient

    app = create_app(Settings(data_dir=tmp_path))
    refused = _locked_once(app.state.engine, "UPDATE work_items")

    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            headers = {"Authorization": f"Bearer {(tmp_path / 'admin.token').read_text().strip()}"}
            ns = "/api/namespaces/default"
            body = {"providerName": "p", "instanceId": "i-1"}
            worker = client.post(f"{ns}/workers", json=body, headers=headers).json()["workerId"]
            item = client.post(f"{ns}/providers/p/work", json={"command": "true"}, headers=headers)
            assert item.status_code == 201
            r = client.get(f"{ns}/workers/{worker}/work", params={"wait": 1}, headers=headers)
            assert r.status_code == 503 and refused, r.text
            assert 1 <= int(r.headers["retry-after"]) <= 4
            again = client.get(f"{ns}/work/{item.json()['id']}", headers=headers).json()
            assert again["state"] == "queued"
            r = client.get(f"{ns}/workers/{worker}/work", params={"wait": 1}, headers=headers)
            assert r.status_code == 200 and r.json()["id"] == item.json()["id"]
    finally:
        app.state.engine.dispose()
