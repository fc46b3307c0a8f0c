"""Provider identity on a real ``lakeshore serve`` (SQLite and PostgreSQL, so the
0003 migration runs on both): claims counted per identity, daemons older than
identities counted by name only while no other identity owns the row, many
providers' claims in one request, and a row's identity fixed once set."""

from __future__ import annotations

from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from lakeshore_fixtures import wait_until

SHARES_SERVER = True  # its tests keep to names of their own: the session's server


def live(c: Client, name: str, identity: str | None = None) -> int:
    return int(c.claims(name, identity)["live"])


def test_claims_count_per_identity(fresh_namespace: tuple[str, Client]) -> None:
    _ns, c = fresh_namespace
    c.register("gpu", "box-a", identity="prv-a")
    c.register("gpu", "box-b", identity="prv-b")
    c.register("gpu", "box-old")  # a daemon from before identities
    assert live(c, "gpu") == 3  # a caller that asks by name alone sees every worker
    assert live(c, "gpu", "prv-a") == 2 and live(c, "gpu", "prv-b") == 2  # no owner yet
    assert live(c, "gpu", "prv-nobody") == 1  # only the old one: it counts by name

    # once an identity owns the row, the old daemon counts for that identity only
    c.create_provider_row({"name": "gpu", "launcher": "SSH", "kwargs": {}, "identity": "prv-b"})
    assert live(c, "gpu", "prv-a") == 1 and live(c, "gpu", "prv-b") == 2
    assert live(c, "gpu", "prv-nobody") == 0
    by_worker = {w["instanceId"]: w.get("identity") for w in c.workers("gpu")}
    assert by_worker == {"box-a": "prv-a", "box-b": "prv-b", "box-old": None}


def test_many_claims_in_one_request(fresh_namespace: tuple[str, Client]) -> None:
    _ns, c = fresh_namespace
    c.register("one", "h1", identity="prv-1")
    w = c.register("two", "h2", identity="prv-2")
    c.deregister(w["workerId"])
    got = c.claims_many([("one", "prv-1"), ("two", "prv-2"), ("one", "prv-x"), ("three", None)])
    assert [(x["live"], x["gone"]) for x in got] == [(1, 0), (0, 1), (0, 0), (0, 0)]
    assert got[0]["instances"][0]["instanceId"] == "h1"
    assert c.claims_many([]) == []


def test_a_row_identity_is_set_once(fresh_namespace: tuple[str, Client]) -> None:
    _ns, c = fresh_namespace
    row = c.create_provider_row({"name": "hand", "launcher": "EC2", "kwargs": {"region": "x"}})
    assert "identity" not in row  # a row registered by hand has none
    adopted = c.update_provider_row("hand", {"identity": "prv-1", "kwargsPatch": {"host": "h"}})
    assert adopted["identity"] == "prv-1" and adopted["kwargs"] == {"region": "x", "host": "h"}
    assert c.update_provider_row("hand", {"identity": "prv-1"})["identity"] == "prv-1"
    with pytest.raises(ApiFailure) as err:
        c.update_provider_row("hand", {"identity": "prv-2"})
    assert err.value.status == 409 and "another provider identity" in str(err.value.detail)
    with pytest.raises(ApiFailure) as err:
        c.create_provider_row({"name": "bad", "launcher": "SSH", "identity": "no spaces please"})
    assert err.value.status == 422


def test_a_bad_identity_from_a_daemon_is_refused(fresh_namespace: tuple[str, Client]) -> None:
    _ns, c = fresh_namespace
    with pytest.raises(ApiFailure) as err:
        c.register("gpu", "box", identity="has space")
    assert err.value.status == 422


def test_a_real_nymph_registers_with_its_identity(
    fresh_namespace: tuple[str, Client], start_nymph: Any
) -> None:
    ns, c = fresh_namespace
    assert c.token
    start_nymph(c.url, c.token, provider="idp", namespace=ns, extra=["--identity", "prv-z"])
    assert wait_until(lambda: live(c, "idp", "prv-z") == 1, timeout=90)
    assert live(c, "idp", "prv-other") == 0
    (w,) = c.workers("idp")
    assert w["identity"] == "prv-z"
