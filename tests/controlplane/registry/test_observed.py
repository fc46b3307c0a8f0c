"""The ``observed`` document a watcher publishes on a provider row: PUT with a
namespace token or the provider's own daemon token (another provider's daemon
token is refused), returned on GET and in the listing, shown by ``lakeshore
providers list`` with how long ago it was published; on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from registry_harness import Server


def _p(ns: str, *rest: str) -> str:
    return "/".join([f"/api/namespaces/{ns}", *rest])


DOC = {
    "status": "connected",
    "targetStatus": "active",
    "degraded": [],
    "nextAction": None,
    "passAt": "2026-01-02T03:04:05Z",
    "watcher": {"pid": 7, "host": "box", "since": "2026-01-02T03:00:00Z"},
}


def test_publish_read_and_list(server: Server) -> None:
    ns = server.namespace()
    token = server.token_for(ns)
    api = server.client(token)
    assert api.post(_p(ns, "providers"), json={"name": "lab", "launcher": "SSH"}).status_code == 201
    assert api.post(_p(ns, "providers"), json={"name": "web", "launcher": "SSH"}).status_code == 201
    row = api.get(_p(ns, "providers", "lab")).json()
    assert row["observed"] is None
    before = row["updatedAt"]

    r = api.put(_p(ns, "providers", "lab", "observed"), json={**DOC, "observedAt": "forged"})
    assert r.status_code == 200, r.text
    got = api.get(_p(ns, "providers", "lab")).json()
    assert got["observed"]["status"] == "connected"
    assert got["observed"]["watcher"] == DOC["watcher"]
    assert got["observed"]["observedAt"] not in (None, "forged")  # the server's clock
    assert got["updatedAt"] == before  # a pass is not a change of the row
    listed = {p["name"]: p for p in api.get(_p(ns, "providers")).json()}
    assert listed["lab"]["observed"]["status"] == "connected"
    assert listed["web"]["observed"] is None

    # The provider's own daemon token may publish; another provider's may not.
    own = server.client().post(
        _p(ns, "tokens"), json={"scope": "daemon", "provider": "lab", "host": "box"}
    )
    assert own.status_code == 201, own.text
    daemon = server.client(own.json()["token"])
    r = daemon.put(_p(ns, "providers", "lab", "observed"), json={**DOC, "status": "unclaimed"})
    assert r.status_code == 200, r.text
    r = daemon.put(_p(ns, "providers", "web", "observed"), json=DOC)
    assert r.status_code == 403, r.text
    assert api.get(_p(ns, "providers", "web")).json()["observed"] is None

    # Refusals: no status, too large, a row that is not there.
    assert api.put(_p(ns, "providers", "lab", "observed"), json={"x": 1}).status_code == 422
    big = {**DOC, "drift": {"resources": ["r" * 100] * 400}}
    assert api.put(_p(ns, "providers", "lab", "observed"), json=big).status_code == 422
    r = api.put(_p(ns, "providers", "nope", "observed"), json=DOC)
    assert r.status_code == 404 and "registered" in r.text

    # lakeshore providers list: an OBSERVED column with the age; --json the member.
    out = server.cli("providers", "list", namespace=ns, token=token)
    assert out.returncode == 0, out.stderr
    head, *lines = out.stdout.splitlines()
    assert head.split() == ["NAME", "LAUNCHER", "DISPATCH", "OBSERVED", "KWARGS"]
    lab = next(line for line in lines if line.startswith("lab "))
    assert "unclaimed (" in lab and " ago)" in lab
    web = next(line for line in lines if line.startswith("web "))
    assert web.split()[3] == "-"
    out = server.cli("providers", "list", "--json", namespace=ns, token=token)
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["lab"]["observed"]["status"] == "unclaimed"
    assert rows["lab"]["observed"]["observedAt"]
    shown = server.cli("providers", "show", "lab", namespace=ns, token=token)
    assert "observed:  unclaimed (" in shown.stdout, shown.stdout


def test_render_without_observed_keeps_the_table() -> None:
    from dreamlake.controlplane.registry.render import observed_cell, providers_table

    rows = [{"name": "a", "launcher": "SSH", "dispatch": "direct", "kwargs": {}}]
    assert providers_table(rows).splitlines()[0].split() == [
        "NAME",
        "LAUNCHER",
        "DISPATCH",
        "KWARGS",
    ]
    row = {"observed": {"status": "connected", "observedAt": "2026-01-01T00:00:00Z"}}
    assert observed_cell(row, now=1767225600 + 125) == "connected (2m ago)"
    row = {"observed": {"status": "applied", "drift": {"count": 2}, "observedAt": "x"}}
    assert observed_cell(row, now=0) == "applied drift (? ago)"
    assert observed_cell({}) == "-"
