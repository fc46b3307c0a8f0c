"""No secret plaintext in any response body, CLI output, error, server log or
database file the registry tests produced (named to run last in this folder; it
also runs its own journey through every path that touches a secret)."""

from __future__ import annotations

import pytest
from registry_harness import PLAINTEXTS, SEEN, SERVERS, Server, stop_shared

pytestmark = pytest.mark.slow


def test_no_plaintext_anywhere(sqlite_server: Server) -> None:
    """The journey runs on the folder's SQLite server, which is then stopped with
    the others so that every server log is read whole."""
    s = sqlite_server
    try:
        ns = s.namespace()
        api = s.client()
        p = f"/api/namespaces/{ns}"
        api.post(
            p + "/secrets", json={"name": "aws", "kind": "aws_keypair", "value": PLAINTEXTS["aws"]}
        )
        api.post(
            p + "/secrets", json={"name": "ssh", "kind": "ssh_key", "value": PLAINTEXTS["ssh"]}
        )
        api.post(
            p + "/secrets", json={"name": "tok", "kind": "token", "value": PLAINTEXTS["token"]}
        )
        api.post(
            p + "/secrets", json={"name": "tok", "kind": "token", "value": PLAINTEXTS["token"]}
        )  # 409
        api.post(
            p + "/secrets",
            json={"name": "bad", "kind": "aws_keypair", "value": PLAINTEXTS["token"]},
        )  # 422
        api.post(
            p + "/secrets", json={"name": "x y", "kind": "token", "value": PLAINTEXTS["token"]}
        )  # 422
        api.post(
            p + "/secrets", json={"name": "k2", "kind": "nope", "value": PLAINTEXTS["token"]}
        )  # 422
        api.post(
            p + "/secrets",
            json={"name": "k3", "value": PLAINTEXTS["token"], "extra": PLAINTEXTS["aws"]},
        )
        api.request(
            "POST",
            p + "/secrets",
            content=b'{"name": "k4", "value": "' + PLAINTEXTS["token"].encode(),
        )
        api.put(p + "/secrets/tok", json={"kind": "token", "value": PLAINTEXTS["token"]})
        kw = {
            "region": "r",
            "aws_credentials": {"$secret": "aws"},
            "ssh": {"key": {"$secret": "ssh"}},
            "tok": {"$secret": "tok"},
            "host": "h",
        }
        api.post(p + "/providers", json={"name": "cloud", "launcher": "EC2", "kwargs": kw})
        api.post(p + "/providers", json={"name": "lab", "launcher": "SSH", "kwargs": kw})
        api.post(p + "/modes", json={"name": "m", "provider": "cloud", "token": {"$secret": "tok"}})
        for path in ("/providers", "/providers/cloud", "/secrets", "/modes", "/modes/m"):
            api.get(p + path)
        api.post(p + "/providers/cloud/test")
        api.post(p + "/providers/lab/test")
        api.post(p + "/launch/preview", json={"mode": "m"})
        api.post(
            p + "/launch/preview", json={"provider": "lab", "runConfig": {"x": {"$secret": "tok"}}}
        )
        api.delete(p + "/secrets/tok")  # 409: referenced
        for args in (
            ("providers", "list", "--all"),
            ("providers", "show", "cloud"),
            ("providers", "show", "cloud", "--json"),
            ("providers", "test", "cloud"),
            ("secrets", "list", "--json"),
            ("modes", "preview", "m", "--json"),
            ("modes", "show", "m"),
        ):
            s.cli(*args, namespace=ns)
    finally:
        stop_shared()

    for server in SERVERS:
        if server.db.startswith("sqlite") or server.db == "leak-scan":
            for f in server.data_dir.glob("lakeshore.db*"):
                SEEN.append((f"database file {f}", f.read_bytes().decode("latin-1")))
    assert len(SEEN) > 40
    needles = [v for v in PLAINTEXTS.values()]
    leaks = [(where, n[:12]) for where, text in SEEN for n in needles if n in text]
    assert leaks == [], f"secret plaintext found in: {leaks}"
