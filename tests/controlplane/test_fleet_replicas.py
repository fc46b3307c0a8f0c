"""Two ``lakeshore serve`` replicas over one throwaway PostgreSQL: the same answers
from both, a long-poll on one woken by work submitted on the other (LISTEN/NOTIFY),
a revocation on one refused by the other at once, one shared key."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure
from lakeshore_fixtures import ServerProc

pytestmark = pytest.mark.needs_postgres


def test_two_replicas_share_work_wakeups_and_revocations(
    start_server: Callable[..., ServerProc], postgres: Any
) -> None:
    db = postgres.new_database()
    a = start_server(db_url=db, live_seconds=30)
    b = start_server(db_url=db, live_seconds=30)
    token = a.admin_token  # the admin token lives in the database: b accepts it too
    on_a, on_b = a.client(token), b.client(token)
    reg = on_b.register("fleet", "i-1", queues=["gpu"])
    assert on_a.claims("fleet")["live"] == 1  # the same answer from the other replica

    got: dict[str, Any] = {}

    def poll() -> None:
        started = time.monotonic()
        got["item"] = on_b.poll_work(reg["workerId"], wait=20)
        got["waited"] = time.monotonic() - started

    poller = threading.Thread(target=poll)
    poller.start()
    time.sleep(1.0)  # the poll is waiting on replica b
    submitted = on_a.submit_work("fleet", "echo hi", queue="gpu")
    poller.join(30)
    assert got["item"] is not None and got["item"]["id"] == submitted["id"]
    assert got["waited"] < 20  # woken by the submit on a, not by the end of its wait

    # a token revoked on one replica is refused by the other (cache dropped by NOTIFY)
    user = a.admin.create_token("default", label="shared")
    assert b.client(user).whoami()["namespace"] == "default"
    row = next(r for r in a.admin.request("GET", "/api/tokens") if r["label"] == "shared")
    a.admin.request("DELETE", f"/api/tokens/{row['id']}")
    deadline = time.monotonic() + 20  # well within the 60 s a cached token is kept
    while True:
        try:
            b.client(user).whoami()
        except ApiFailure as exc:
            assert exc.status == 401
            break
        assert time.monotonic() < deadline, "replica b still accepts a revoked token"
        time.sleep(0.1)

    # one key: a secret written through a decrypts through b
    import json
    import urllib.request

    def call(url: str, method: str, path: str, body: Any = None) -> Any:
        req = urllib.request.Request(
            url + path, data=json.dumps(body).encode() if body is not None else None, method=method
        )
        req.add_header("Authorization", f"Bearer {token}")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    call(a.url, "POST", "/api/namespaces/default/secrets", {"name": "pw", "value": "s3"})
    call(
        a.url,
        "POST",
        "/api/namespaces/default/providers",
        {"name": "ssh1", "launcher": "SSH", "kwargs": {"host": "h", "password": {"$secret": "pw"}}},
    )
    report = call(b.url, "POST", "/api/namespaces/default/providers/ssh1/test")
    assert "does not decrypt" not in json.dumps(report)
