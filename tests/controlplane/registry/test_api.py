"""The registry API through a real ``lakeshore serve`` (SQLite and PostgreSQL)."""

from __future__ import annotations

import re
import sqlite3

from registry_harness import PLAINTEXTS, Server


def _p(ns: str, *rest: str) -> str:
    return "/".join([f"/api/namespaces/{ns}", *rest])


def test_provider_round_trip_and_dispatch_defaults(server: Server) -> None:
    ns = server.namespace()
    api = server.client()
    kwargs = {"region": "us-east-1", "nested": {"a": [1, {"b": None}], "c": 1.5}, "flag": False}
    r = api.post(
        _p(ns, "providers"), json={"name": "aws-us-east", "launcher": "EC2", "kwargs": kwargs}
    )
    assert r.status_code == 201, r.text
    row = r.json()
    assert row["kwargs"] == kwargs  # verbatim, nulls and all
    assert row["dispatch"] == "daemon" and row["launcher"] == "EC2" and row["name"] == "aws-us-east"
    for launcher, default in (
        ("GCE", "daemon"),
        ("Kube", "direct"),
        ("SSH", "direct"),
        ("SLURM", "direct"),
    ):
        name = f"p-{launcher.lower()}"
        assert (
            api.post(_p(ns, "providers"), json={"name": name, "launcher": launcher}).status_code
            == 201
        )
        assert api.get(_p(ns, "providers", name)).json()["dispatch"] == default
    r = api.post(
        _p(ns, "providers"),
        json={"name": "ec2-direct", "launcher": "EC2", "kwargs": {}, "dispatch": "direct"},
    )
    assert r.json()["dispatch"] == "direct"
    listed = {p["name"]: p for p in api.get(_p(ns, "providers")).json()}
    assert set(listed) == {"aws-us-east", "p-gce", "p-kube", "p-ssh", "p-slurm", "ec2-direct"}
    assert all(p["dispatch"] in ("direct", "daemon") for p in listed.values())


def test_dispatch_lives_in_config_column(server: Server) -> None:
    """launcher -> Provider.kind, kwargs -> Provider.config, dispatch inside config."""
    if server.db != "sqlite":
        return
    ns = server.namespace()
    api = server.client()
    api.post(
        _p(ns, "providers"),
        json={"name": "col", "launcher": "Kube", "kwargs": {"context": "c"}, "dispatch": "daemon"},
    )
    con = sqlite3.connect(server.data_dir / "lakeshore.db")
    kind, config = con.execute("SELECT kind, config FROM providers WHERE name='col'").fetchone()
    con.close()
    assert kind == "Kube"
    assert '"dispatch": "daemon"' in config and '"context": "c"' in config


def test_validation(server: Server) -> None:
    ns = server.namespace()
    api = server.client()
    post = lambda body: api.post(_p(ns, "providers"), json=body)  # noqa: E731
    assert post({"name": "Bad_Name", "launcher": "EC2"}).status_code == 422
    assert post({"name": "-x", "launcher": "EC2"}).status_code == 422
    r = post({"name": "x", "launcher": "ec2"})
    assert r.status_code == 422 and "EC2" in r.json()["detail"]
    assert post({"name": "x", "launcher": "Azure"}).status_code == 422
    assert post({"name": "x", "launcher": "EC2", "dispatch": "hybrid"}).status_code == 422
    assert post({"name": "x", "launcher": "EC2", "kwargs": [1]}).status_code == 422
    r = post({"name": "x", "launcher": "EC2", "kwargs": {"k": {"$secret": "missing"}}})
    assert r.status_code == 422 and "missing" in r.json()["detail"]
    assert post({"name": "x", "launcher": "EC2"}).status_code == 201
    r = post({"name": "x", "launcher": "SSH"})
    assert r.status_code == 409
    r = api.patch(_p(ns, "providers", "x"), json={"launcher": "SSH"})
    assert r.status_code == 422 and "immutable" in r.json()["detail"]
    assert api.get(_p(ns, "providers", "nope")).status_code == 404


def test_update_semantics(server: Server) -> None:
    ns = server.namespace()
    api = server.client()
    api.post(
        _p(ns, "providers"),
        json={
            "name": "u",
            "launcher": "SSH",
            "kwargs": {"host": "h", "opts": {"a": 1, "b": 2}, "keep": 1},
        },
    )
    r = api.patch(
        _p(ns, "providers", "u"), json={"kwargsPatch": {"opts": {"a": None, "c": 3}, "host": "h2"}}
    )
    assert r.json()["kwargs"] == {"host": "h2", "opts": {"b": 2, "c": 3}, "keep": 1}
    r = api.patch(_p(ns, "providers", "u"), json={"kwargs": {"only": True}})
    assert r.json()["kwargs"] == {"only": True}
    r = api.patch(_p(ns, "providers", "u"), json={"dispatch": "daemon", "tunnel": "wg-lab"})
    assert r.json()["dispatch"] == "daemon" and r.json()["tunnel"] == "wg-lab"
    r = api.patch(_p(ns, "providers", "u"), json={"dispatch": None, "tunnel": ""})
    assert r.json()["dispatch"] == "direct" and r.json()["tunnel"] is None


def test_soft_delete_hide_restore(server: Server) -> None:
    ns = server.namespace()
    api = server.client()
    api.post(_p(ns, "providers"), json={"name": "a", "launcher": "SSH", "kwargs": {"v": 1}})
    api.post(_p(ns, "providers"), json={"name": "h", "launcher": "SSH"})
    assert api.patch(_p(ns, "providers", "h"), json={"hidden": True}).json()["hidden"] is True
    names = lambda **q: sorted(p["name"] for p in api.get(_p(ns, "providers"), params=q).json())  # noqa: E731
    assert names() == ["a"]
    assert names(hidden="true") == ["a", "h"]
    r = api.delete(_p(ns, "providers", "a"))
    assert r.status_code == 200 and r.json()["name"] == "a"
    assert re.match(r"^\d{4}-\d\d-\d\dT", r.json()["deletedAt"])
    assert names() == []
    assert names(deleted="true") == ["a"]
    assert names(all="true") == ["a", "h"]
    # the name is free again; the tombstone keeps the unique index intact
    assert (
        api.post(
            _p(ns, "providers"), json={"name": "a", "launcher": "GCE", "kwargs": {"v": 2}}
        ).status_code
        == 201
    )
    assert api.delete(_p(ns, "providers", "a")).status_code == 200
    rows = api.get(_p(ns, "providers"), params={"deleted": "true"}).json()
    assert [r["name"] for r in rows] == ["a", "a"]  # responses strip the suffix
    assert all("[deleted" not in r["name"] for r in rows)
    r = api.post(_p(ns, "providers", "a", "restore"))
    assert r.status_code == 200 and r.json()["launcher"] == "GCE" and r.json()["deletedAt"] is None
    assert api.post(_p(ns, "providers", "a", "restore")).status_code == 409  # an active 'a' exists
    assert api.patch(_p(ns, "providers", "a"), json={"hidden": False}).status_code == 200
    assert api.post(_p(ns, "providers", "zz", "restore")).status_code == 404
    assert api.get(_p(ns, "providers", "h")).json()["hidden"] is True


def test_org_scoping(server: Server) -> None:
    org = f"org-shared-{server.db}"
    a, b = server.namespace(org), server.namespace(org)
    other = server.namespace()
    tok_a = server.token_for(a)
    api_a = server.client(tok_a)
    api_b = server.client(server.token_for(b))
    # org siblings read each other and change only their own namespace
    refused = api_a.post(_p(b, "providers"), json={"name": "in-b", "launcher": "SSH"})
    assert refused.status_code == 403 and "read-only" in refused.text
    assert (
        api_b.post(_p(b, "providers"), json={"name": "in-b", "launcher": "SSH"}).status_code == 201
    )
    # listing, lookups and duplicate checks span the org
    assert [p["name"] for p in api_a.get(_p(a, "providers")).json()] == ["in-b"]
    assert api_a.get(_p(a, "providers", "in-b")).json()["namespace"] == b
    assert (
        api_a.post(_p(a, "providers"), json={"name": "in-b", "launcher": "EC2"}).status_code == 409
    )
    # a row of b, found through a's lookups, is still b's to change
    through = api_a.patch(_p(a, "providers", "in-b"), json={"hidden": True})
    assert through.status_code == 403 and "read-only" in through.text
    assert api_a.delete(_p(a, "providers", "in-b")).status_code == 403
    assert api_b.patch(_p(b, "providers", "in-b"), json={"hidden": True}).status_code == 200
    # a namespace outside the org sees none of it, and the token does not reach it
    assert server.client().get(_p(other, "providers")).json() == []
    assert api_a.get(_p(other, "providers")).status_code == 403


def test_no_org_listing_is_scoped_on_a_new_install(server: Server) -> None:
    """The spec's unscoped no-org listing is opt-in for new installs
    (LAKESHORE_UNSCOPED_LISTINGS; tests/controlplane/test_fleet_server.py covers it)."""
    x, y = server.namespace(None), server.namespace(None)
    api = server.client()
    api.post(_p(y, "providers"), json={"name": f"from-{y}", "launcher": "SSH"})
    listed = api.get(_p(x, "providers")).json()
    assert not any(p["namespace"] == y for p in listed)
    # duplicate checks stay per namespace without an org
    assert (
        api.post(_p(x, "providers"), json={"name": f"from-{y}", "launcher": "SSH"}).status_code
        == 201
    )


def test_secrets_never_come_back(server: Server) -> None:
    ns = server.namespace()
    api = server.client()
    r = api.post(
        _p(ns, "secrets"), json={"name": "aws", "kind": "aws_keypair", "value": PLAINTEXTS["aws"]}
    )
    assert r.status_code == 201 and set(r.json()) == {
        "name",
        "namespace",
        "kind",
        "createdAt",
        "updatedAt",
    }
    assert api.post(_p(ns, "secrets"), json={"name": "aws", "value": "x"}).status_code == 409
    bad = api.post(
        _p(ns, "secrets"), json={"name": "kp", "kind": "aws_keypair", "value": PLAINTEXTS["token"]}
    )
    assert bad.status_code == 422 and PLAINTEXTS["token"] not in bad.text
    assert (
        api.put(
            _p(ns, "secrets", "tok"), json={"kind": "token", "value": PLAINTEXTS["token"]}
        ).status_code
        == 201
    )
    assert (
        api.put(
            _p(ns, "secrets", "tok"), json={"kind": "token", "value": PLAINTEXTS["token"]}
        ).status_code
        == 200
    )
    listed = api.get(_p(ns, "secrets")).json()
    assert [s["name"] for s in listed] == ["aws", "tok"] and all("value" not in s for s in listed)
    body = {
        "name": "cloud",
        "launcher": "EC2",
        "kwargs": {"region": "r", "aws_credentials": {"$secret": "aws"}},
    }
    assert api.post(_p(ns, "providers"), json=body).status_code == 201
    assert api.delete(_p(ns, "secrets", "aws")).status_code == 409  # still referenced
    r = api.post(_p(ns, "providers", "cloud", "test"))
    assert r.status_code == 200 and r.json()["ok"] is True
    assert any("did not call AWS" in x for x in r.json()["notChecked"])
    if server.db == "sqlite":
        raw = (server.data_dir / "lakeshore.db").read_bytes()
        for wal in server.data_dir.glob("lakeshore.db-wal"):
            raw += wal.read_bytes()
        assert (
            PLAINTEXTS["aws_secret"].encode() not in raw and PLAINTEXTS["token"].encode() not in raw
        )
    key = server.data_dir / "secret.key"
    assert key.is_file() and key.stat().st_mode & 0o777 == 0o600


def test_modes_and_extras(server: Server) -> None:
    ns = server.namespace()
    api = server.client()
    r = api.post(
        _p(ns, "modes"),
        json={
            "name": "h100",
            "provider": "aws",
            "instance_type": "g5.xlarge",
            "resources": {"gpu": 1},
            "timeout_s": 60,
        },
    )
    assert r.status_code == 201, r.text
    m = r.json()
    assert m["backend"] == "fabric" and m["runner"] == "process"
    assert (
        m["instance_type"] == "g5.xlarge" and m["resources"] == {"gpu": 1} and m["timeout_s"] == 60
    )
    assert api.post(_p(ns, "modes"), json={"name": "h100"}).status_code == 409
    r = api.patch(
        _p(ns, "modes", "h100"),
        json={"instance_type": None, "image_id": "ami-1", "runner": "docker"},
    )
    assert (
        r.json()["runner"] == "docker"
        and "instance_type" not in r.json()
        and r.json()["image_id"] == "ami-1"
    )
    assert api.post(_p(ns, "modes"), json={"name": "bad", "timeout_s": "soon"}).status_code == 422
    assert [x["name"] for x in api.get(_p(ns, "modes")).json()] == ["h100"]
    assert api.delete(_p(ns, "modes", "h100")).status_code == 200
    assert api.get(_p(ns, "modes", "h100")).status_code == 404


def test_mode_strings_too_wide_or_with_nul_are_422_on_every_backend(server: Server) -> None:
    """PostgreSQL enforces the string columns' widths and refuses NUL; SQLite does
    neither. The API answers 422 on both, never a 500 carrying the SQL."""
    ns = server.namespace()
    api = server.client()
    for name, body in (
        ("wide", {"runner": "r" * 64}),
        ("nul", {"image": "a\x00b"}),
        ("far", {"provider": "p" * 256}),
    ):
        r = api.post(_p(ns, "modes"), json={"name": name, **body})
        assert r.status_code == 422, r.text
        assert "SQL" not in r.text
    api.post(_p(ns, "modes"), json={"name": "ok"})
    r = api.patch(_p(ns, "modes", "ok"), json={"backend": "b" * 64})
    assert r.status_code == 422 and api.get(_p(ns, "modes", "ok")).json()["backend"] == "fabric"


def test_launch_preview(server: Server) -> None:
    ns = server.namespace()
    api = server.client()
    api.post(
        _p(ns, "secrets"), json={"name": "aws", "kind": "aws_keypair", "value": PLAINTEXTS["aws"]}
    )
    api.post(
        _p(ns, "providers"),
        json={
            "name": "cloud",
            "launcher": "EC2",
            "kwargs": {
                "region": "us-east-1",
                "security_group": ["sg-a"],
                "aws_credentials": {"$secret": "aws"},
                "block": {"size": 10, "type": "gp3"},
            },
        },
    )
    api.post(
        _p(ns, "modes"),
        json={
            "name": "gpu",
            "provider": "cloud",
            "security_group": ["sg-a", "sg-b"],
            "block": {"size": 100},
            "runner": "docker",
            "image": "img",
            "env": {"A": "1"},
        },
    )
    r = api.post(
        _p(ns, "launch", "preview"), json={"mode": "gpu", "runConfig": {"region": "us-west-2"}}
    )
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["kwargs"] == {
        "region": "us-west-2",
        "security_group": ["sg-a", "sg-b"],
        "aws_credentials": {"$secret": "aws"},
        "block": {"size": 100, "type": "gp3"},
    }
    assert out["tags"] == {
        "lakeshore": "true",
        "lakeshore-namespace": ns,
        "lakeshore-provider": "cloud",
    }
    assert out["run"] == {"runner": "docker", "image": "img", "env": {"A": "1"}}
    assert out["serverLaunch"] is True and out["dispatch"] == "daemon"
    assert api.post(_p(ns, "launch", "preview"), json={"runConfig": {}}).status_code == 422
    assert api.post(_p(ns, "launch", "preview"), json={"provider": "ghost"}).status_code == 404


def test_launch_route_takes_all_five(server: Server) -> None:
    """SSH and SLURM launch server-side too now: with no host the launcher (not the
    route) refuses, with a 4xx that says what is missing. (They leave a daemon here:
    direct dispatch would first ask for the command to run.)"""
    ns = server.namespace()
    api = server.client()
    for name, launcher in (("s", "SSH"), ("l", "SLURM"), ("e", "EC2")):
        body = {"name": name, "launcher": launcher}
        if launcher != "EC2":
            body["dispatch"] = "daemon"
        api.post(_p(ns, "providers"), json=body)
    for name in ("s", "l"):
        r = api.post(_p(ns, "launch"), json={"provider": name})
        assert r.status_code == 422 and "host" in r.json()["detail"], r.text
    r = api.post(_p(ns, "launch"), json={"provider": "e"})
    assert r.status_code == 422 and "region" in r.json()["detail"], r.text
