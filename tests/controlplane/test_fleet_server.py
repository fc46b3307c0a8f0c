"""The server under a crowd, its keys, tokens and files: the pool stall as a real
HTTP concurrency test, key mismatch refused, the first key race-free, key rotation,
token revocation / expiry / admin rotation, and 0700 / 0600 on every start."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import stat
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from lakeshore_fixtures import ServerProc, clean_env, free_port, lakeshore_argv, wait_until


def _req(url: str, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_a_crowd_does_not_stall_the_pool(start_server: Callable[..., ServerProc]) -> None:
    """200 concurrent registrations and claims against a 4-thread pool: every one
    answers 2xx and /healthz answers meanwhile (the old pool stalled, then 500).
    Shedding is off: on a busy machine the queue's wait alone would answer some 503."""
    off = {"LAKESHORE_MAX_PENDING": "0", "LAKESHORE_MAX_QUEUE_SECONDS": "0"}
    s = start_server(env={"LAKESHORE_POOL_SIZE": "4", **off})
    token = s.admin_token

    def one(i: int) -> int:
        if i % 2:
            body = {"providerName": f"p{i % 7}", "instanceId": f"i-{i}"}
            return _req(s.url, "POST", "/api/namespaces/default/workers", token, body)[0]
        return _req(s.url, "GET", f"/api/namespaces/default/providers/p{i % 7}/claims", token)[0]

    health: list[int] = []

    def probe() -> None:
        with urllib.request.urlopen(s.url + "/healthz", timeout=60) as r:
            health.append(r.status)

    with concurrent.futures.ThreadPoolExecutor(max_workers=200) as pool:
        futures = [pool.submit(one, i) for i in range(400)]
        prober = threading.Thread(target=probe)
        prober.start()
        statuses = [f.result() for f in futures]
        prober.join()
    assert all(200 <= st < 300 for st in statuses), sorted(set(statuses))
    assert health == [200]
    claims = [
        _req(s.url, "GET", f"/api/namespaces/default/providers/p{k}/claims", token)[1]
        for k in range(7)
    ]
    assert sum(c["live"] + c["gone"] for c in claims) == 200  # every registration stored


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    """One plain server (SQLite, default settings) for the tests that change nothing
    another of them reads: its first secret writes, token revocation and admin
    rotation (the admin token is read from its file at each use), set-org."""
    s = ServerProc(data_dir=tmp_path_factory.mktemp("plain"), port=free_port()).start()
    try:
        yield s
    finally:
        s.stop()


def test_first_secret_writes_race_free(plain: ServerProc) -> None:
    """The first secret writes of a server, 16 at once (no other test here writes one)."""
    s = plain

    def put(i: int) -> int:
        body = {"name": f"s{i}", "value": "v"}
        return _req(s.url, "POST", "/api/namespaces/default/secrets", s.admin_token, body)[0]

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        assert list(pool.map(put, range(16))) == [201] * 16


def test_key_file_creation_is_race_free(tmp_path: Path) -> None:
    from dreamlake.controlplane.server.access.keys import load_key
    from dreamlake.controlplane.server.settings import Settings

    settings = Settings(data_dir=tmp_path)
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        keys = set(pool.map(lambda _: load_key(settings), range(16)))
    assert len(keys) == 1
    assert stat.S_IMODE((tmp_path / "secret.key").stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret.key"]  # no temp files left


def _serve_fails(data_dir: Path, env: dict[str, str], db: str | None = None) -> str:
    argv = [*lakeshore_argv(), "serve", "--port", "1", "--data-dir", str(data_dir)]
    if db:
        argv += ["--db", db]
    out = subprocess.run(argv, env=clean_env(**env), capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    return out.stderr


def test_a_replica_with_another_key_refuses_to_start(
    start_server: Callable[..., ServerProc], tmp_path: Path, postgres: Any
) -> None:
    from cryptography.fernet import Fernet

    db = postgres.new_database()
    first = start_server(db_url=db, env={"LAKESHORE_SECRET_KEY": Fernet.generate_key().decode()})
    assert first.admin.whoami()["admin"]
    err = _serve_fails(
        tmp_path / "other", {"LAKESHORE_SECRET_KEY": Fernet.generate_key().decode()}, db
    )
    assert "not the key this database's secrets are encrypted with" in err
    assert "LAKESHORE_SECRET_KEY" in err
    # the next step names the key, not the database or the data folder
    (next_line,) = [line for line in err.splitlines() if line.startswith("next: ")]
    assert "read it from LAKESHORE_SECRET_KEY" in next_line, next_line
    assert "--db" not in next_line and "LAKESHORE_SECRET_KEY_FILE" in next_line


def test_key_rotation_reencrypts_and_old_key_is_refused(
    start_server: Callable[..., ServerProc], tmp_path: Path
) -> None:
    data = tmp_path / "rot"
    s = start_server(data_dir=data)
    admin = s.admin
    assert (
        _req(
            s.url,
            "POST",
            "/api/namespaces/default/secrets",
            s.admin_token,
            {"name": "pw", "value": "hunter2"},
        )[0]
        == 201
    )
    body = {
        "name": "uses",
        "launcher": "SSH",
        "kwargs": {"host": "h", "password": {"$secret": "pw"}},
    }
    assert _req(s.url, "POST", "/api/namespaces/default/providers", s.admin_token, body)[0] == 201
    s.stop()
    old_key = (data / "secret.key").read_bytes()
    out = subprocess.run(
        [*lakeshore_argv(), "keys", "rotate", "--data-dir", str(data)],
        env=clean_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "re-encrypted 1 secret" in out.stdout
    assert (data / "secret.key").read_bytes() != old_key
    assert stat.S_IMODE((data / "secret.key").stat().st_mode) == 0o600
    s2 = start_server(data_dir=data)
    status, report = _req(
        s2.url, "POST", "/api/namespaces/default/providers/uses/test", s2.admin_token
    )
    assert status == 200 and "does not decrypt" not in json.dumps(report)
    s2.stop()
    (data / "secret.key").write_bytes(old_key)
    assert "not the key" in _serve_fails(data, {})
    del admin


def test_revoke_expiry_and_admin_rotation(plain: ServerProc) -> None:
    s = plain
    admin = s.admin
    t = admin.create_token("default", label="short")
    user = s.client(t)
    assert user.whoami()["namespace"] == "default"
    listed = admin.request("GET", "/api/tokens")
    row = next(r for r in listed if r["label"] == "short")
    assert "token" not in row and row["namespace"] == "default"
    admin.request("DELETE", f"/api/tokens/{row['id']}")
    with pytest.raises(ApiFailure) as err:
        user.whoami()
    assert err.value.status == 401
    # expiry
    brief = admin.create_token("default", label="brief", expires_in=1)
    assert s.client(brief).whoami()["namespace"] == "default"
    assert wait_until(lambda: _req(s.url, "GET", "/api/whoami", brief)[0] == 401, 15)
    # the admin token, rotated by a command; the old one stops working
    old = s.admin_token
    out = subprocess.run(
        [*lakeshore_argv(), "tokens", "rotate-admin", "--server", s.url, "--data-dir", str(s.data_dir)],
        env=clean_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    new = s.admin_token  # the server rewrote its admin token file
    assert new != old and new in out.stdout
    assert _req(s.url, "GET", "/api/whoami", old)[0] == 401
    assert Client(s.url, new).whoami()["admin"] is True
    listed = subprocess.run(
        [*lakeshore_argv(), "tokens", "list", "--server", s.url, "--data-dir", str(s.data_dir), "--json"],
        env=clean_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listed.returncode == 0 and new not in listed.stdout


def test_files_are_tightened_on_every_start(
    start_server: Callable[..., ServerProc], tmp_path: Path
) -> None:
    data = tmp_path / "loose"
    s = start_server(data_dir=data)
    # a fresh folder is made tight
    assert stat.S_IMODE((data / "lakeshore.db").stat().st_mode) == 0o600
    assert not os.access(data, os.W_OK) or stat.S_IMODE(data.stat().st_mode) == 0o700
    s.stop()
    data.chmod(0o755)
    for name in ("lakeshore.db", "admin.token"):
        (data / name).chmod(0o644)
    s = start_server(data_dir=data)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for p in data.iterdir():
        if p.name.startswith("lakeshore.db") or p.name in ("admin.token", "secret.key"):
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


def test_unscoped_listings_are_opt_in(start_server: Callable[..., ServerProc]) -> None:
    """With LAKESHORE_UNSCOPED_LISTINGS=true a no-org namespace lists every row (the
    spec's rule); new installs without it list their own."""
    s = start_server(env={"LAKESHORE_UNSCOPED_LISTINGS": "true"})
    admin = s.admin
    for ns in ("xa", "xb"):
        admin.create_namespace(ns)
    body = {"name": "from-xb", "launcher": "SSH"}
    assert _req(s.url, "POST", "/api/namespaces/xb/providers", s.admin_token, body)[0] == 201
    listed = _req(s.url, "GET", "/api/namespaces/xa/providers", s.admin_token)[1]
    assert [(r["name"], r["namespace"]) for r in listed] == [("from-xb", "xb")]


def test_set_org_on_default_from_the_cli(plain: ServerProc) -> None:
    s = plain
    base = [
        *lakeshore_argv(),
        "namespaces",
        "set-org",
        "--server",
        s.url,
        "--data-dir",
        str(s.data_dir),
    ]
    out = subprocess.run(
        [*base, "default", "acme"], env=clean_env(), capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and "org acme" in out.stdout, out.stderr
    assert s.admin.request("GET", "/api/namespaces/default")["orgId"] == "acme"
    out = subprocess.run(
        [*base, "default", "--none"], env=clean_env(), capture_output=True, text=True, timeout=60
    )
    assert (
        out.returncode == 0 and s.admin.request("GET", "/api/namespaces/default")["orgId"] is None
    )


def test_a_result_awaited_with_wait_is_answered_as_it_stands_on_shutdown(
    start_server: Callable[..., ServerProc],
) -> None:
    """SIGTERM ends ``GET …/work/{id}?wait=`` at once with the item as it stands, as
    held polls are answered at once: the shutdown does not wait out its grace."""
    s = start_server(env={"LAKESHORE_SHUTDOWN_GRACE_SECONDS": "60"})
    item = s.admin.submit_work("nobody-runs-it", "true")
    answers: list[Any] = []

    def waiter() -> None:
        try:
            answers.append(s.admin.get_work(item["id"], wait=50))
        except Exception as exc:
            answers.append(exc)

    t = threading.Thread(target=waiter, daemon=True)
    t.start()
    # the wait is held: in flight beside the scrape that asks
    assert wait_until(lambda: _gauge(s, "lakeshore_http_requests_in_flight") >= 2, 60, 0.5)
    assert not answers
    assert s.proc is not None
    started = time.monotonic()
    s.proc.send_signal(signal.SIGTERM)
    # uvicorn shuts down, then raises the signal again: the exit says SIGTERM
    assert s.proc.wait(timeout=30) in (0, -signal.SIGTERM)
    took = time.monotonic() - started
    t.join(10)
    assert len(answers) == 1 and isinstance(answers[0], dict), answers
    assert (answers[0]["id"], answers[0]["state"]) == (item["id"], "queued")
    # waiting out the grace would end with the wait itself, after 50 s
    assert took < 30, f"the shutdown waited {took:.1f}s: out the 60 s grace"


def _gauge(s: ServerProc, name: str) -> float:
    """A gauge's value as the server's /metrics says now."""
    req = urllib.request.Request(s.url + "/metrics")
    req.add_header("Authorization", f"Bearer {s.admin_token}")
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
    (line,) = [x for x in text.splitlines() if x.startswith(name + " ")]
    return float(line.split()[-1])


def _raw(url: str, request: bytes, n: int, during: Callable[[], None]) -> list[str]:
    """``n`` connections each sending ``request`` at once, ``during()`` once they are
    all written; the status of each answer ("cut off": closed before an answer,
    "reset": never accepted)."""
    import asyncio

    host, port = url.removeprefix("http://").split(":")

    async def crowd() -> list[str]:
        conns = [await asyncio.open_connection(host, int(port)) for _ in range(n)]
        for _reader, writer in conns:
            writer.write(request)
        for _reader, writer in conns:
            await writer.drain()
        during()

        async def status(reader: asyncio.StreamReader) -> str:
            try:
                line = await asyncio.wait_for(reader.readline(), 60)
            except ConnectionResetError:  # never accepted: the listener closed first
                return "reset"
            return line.decode().split(" ")[1] if line else "cut off"

        got = await asyncio.gather(*(status(r) for r, _w in conns))
        for _r, w in conns:
            w.close()
        return list(got)

    return asyncio.run(crowd())


def test_a_shutdown_answers_every_request_in_flight_before_its_grace_starts(
    start_server: Callable[..., ServerProc],
) -> None:
    """300 registrations queued for a one-thread pool when SIGTERM comes, with a
    shutdown grace of 0 s: what the server has read it answers before the grace
    starts (uvicorn cancels what is left when it ends, and a cancelled request is a
    500); a connection it had not yet read from is closed unanswered, for its client
    to try again."""
    s = start_server(env={"LAKESHORE_SHUTDOWN_GRACE_SECONDS": "0", "LAKESHORE_POOL_SIZE": "1"})
    body = json.dumps({"providerName": "drain", "instanceId": "i-1"}).encode()
    request = (
        b"POST /api/namespaces/default/workers HTTP/1.1\r\nHost: x\r\n"
        + f"Authorization: Bearer {s.admin_token}\r\n".encode()
        + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    assert s.proc is not None
    proc = s.proc
    started = time.monotonic()
    statuses = _raw(s.url, request, 300, lambda: proc.send_signal(signal.SIGTERM))
    assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
    counts = {st: statuses.count(st) for st in set(statuses)}
    assert "500" not in counts and counts.get("201", 0) > 0, counts
    assert time.monotonic() - started < 30


def test_every_held_poll_is_answered_503_on_shutdown(
    start_server: Callable[..., ServerProc],
) -> None:
    """1,000 polls held on one server, a shutdown grace of 0 s: each is answered
    503 (its daemon comes back after the Retry-After), none 500, none cut off."""
    s = start_server(env={"LAKESHORE_SHUTDOWN_GRACE_SECONDS": "0"})
    worker = s.admin.register("drain", "i-1")["workerId"]
    assert s.admin.poll_work(worker, wait=0.5) is None  # known empty: the hot path holds
    request = (
        f"GET /api/namespaces/default/workers/{worker}/work?wait=50 HTTP/1.1\r\n"
        f"Host: x\r\nAuthorization: Bearer {s.admin_token}\r\n\r\n"
    ).encode()
    assert s.proc is not None
    proc = s.proc

    def stop() -> None:  # once every poll is held
        held = wait_until(lambda: _gauge(s, "lakeshore_long_polls_held") >= 1000, 60, 0.5)
        proc.send_signal(signal.SIGTERM)
        assert held, "the 1,000 polls were not all held in 60 s"

    statuses = _raw(s.url, request, 1000, stop)
    assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
    assert {st: statuses.count(st) for st in set(statuses)} == {"503": 1000}
