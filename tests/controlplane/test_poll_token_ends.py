"""A token that ends stops work at once: a long-poll held from before its token
expired or was revoked hands out nothing submitted afterwards (401), and the item
stays queued for a worker whose token is in force. Real ``lakeshore serve``."""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure
from lakeshore_fixtures import ServerProc

SHARES_SERVER = True  # its tests keep to namespaces and tokens of their own: the session's server


def _held_poll(api: Any, worker: str, wait: float) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["item"] = api.poll_work(worker, wait=wait)
        except ApiFailure as exc:
            out["status"] = exc.status

    t = threading.Thread(target=run)
    t.start()
    return t, out


def _setup(server: ServerProc, **token: Any) -> tuple[str, Any, str, str]:
    ns = f"end-{secrets.token_hex(3)}"
    admin = server.admin
    admin.create_namespace(ns)
    label = f"d-{secrets.token_hex(3)}"
    tok = admin.create_token(ns, label=label, scope="daemon", provider="p", host="h", **token)
    api = server.client(tok, namespace=ns)
    worker = api.register("p", "i-1", queues=["default"])["workerId"]
    return ns, api, worker, label


def _ended_poll_claims_nothing(server: ServerProc, ns: str, t: Any, out: dict[str, Any]) -> None:
    admin = server.client(server.admin_token, namespace=ns)
    item = admin.submit_work("p", "echo after")
    t.join(timeout=30)
    assert not t.is_alive()
    assert out == {"status": 401}, out
    assert admin.get_work(item["id"])["state"] == "queued"
    # a worker under a token in force takes it
    other = admin.register("p", "i-2", queues=["default"])["workerId"]
    got = admin.poll_work(other, wait=5)
    assert got is not None and got["id"] == item["id"]


@pytest.mark.parametrize("first", ["idle", "fresh"])
def test_a_poll_held_past_its_tokens_expiry_claims_nothing(server: ServerProc, first: str) -> None:
    ns, api, worker, _ = _setup(server, expires_in=3)
    if first == "idle":  # the server already knows the provider has nothing queued
        assert api.poll_work(worker, wait=0) is None
    t, out = _held_poll(api, worker, wait=15)
    time.sleep(4.0)  # past the expiry, the poll still held
    _ended_poll_claims_nothing(server, ns, t, out)


@pytest.mark.parametrize("first", ["idle", "fresh"])
def test_a_poll_held_across_its_tokens_revocation_claims_nothing(
    server: ServerProc, first: str
) -> None:
    ns, api, worker, label = _setup(server)
    if first == "idle":
        assert api.poll_work(worker, wait=0) is None
    t, out = _held_poll(api, worker, wait=15)
    time.sleep(1.0)
    (tid,) = [r["id"] for r in server.admin.request("GET", "/api/tokens") if r["label"] == label]
    server.admin.request("DELETE", f"/api/tokens/{tid}")
    time.sleep(0.5)
    _ended_poll_claims_nothing(server, ns, t, out)
