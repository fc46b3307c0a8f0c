"""Text UTF-8 cannot encode (a lone surrogate, which JSON's ``\\udcff`` escape allows)
is refused at the door on every route that takes a body, naming the field, and a row
stored with such text before the door knew never breaks a listing of the org: it is
listed with the field marked. Real server over HTTP on 127.0.0.1, SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from lakeshore_fixtures import ServerProc
from test_lakeshore_api import raw

SHARES_SERVER = True  # its tests keep to orgs of their own and repair the rows they poison

SURROGATE = "\\udcff"  # as the JSON text carries it: a lone low surrogate


def _errors(out: Any) -> list[dict[str, Any]]:
    """The per-field list of a 422 (``errors``, or ``detail`` when that is the list)."""
    if isinstance(out.get("errors"), list):
        return out["errors"]  # type: ignore[no-any-return]
    assert isinstance(out.get("detail"), list), out
    return out["detail"]  # type: ignore[no-any-return]


def _org(server: ServerProc, size: int = 2) -> tuple[list[str], dict[str, str]]:
    """``size`` namespaces in one new org, and a token of each."""
    org = f"org-{secrets.token_hex(3)}"
    names, tokens = [], {}
    for _ in range(size):
        ns = f"u-{secrets.token_hex(4)}"
        server.admin.create_namespace(ns)
        body = json.dumps({"orgId": org}).encode()
        status, out = raw(server, "PATCH", f"/api/namespaces/{ns}", body, server.admin_token)
        assert status == 200, out
        names.append(ns)
        tokens[ns] = server.admin.create_token(ns)
    return names, tokens


def _body_routes(server: ServerProc) -> list[tuple[str, str]]:
    """Every (method, path) of the app that takes a request body, from its own routes."""
    status, spec = raw(server, "GET", "/openapi.json")
    assert status == 200
    found = [
        (method.upper(), path)
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
        if isinstance(op, dict) and "requestBody" in op
    ]
    assert len(found) > 20, found  # the registry, launch, queues, capacity and core routes
    return sorted(found)


def _listing_routes(server: ServerProc) -> list[str]:
    """Every GET of a namespace with no other path parameter (the listings)."""
    status, spec = raw(server, "GET", "/openapi.json")
    assert status == 200
    return sorted(
        path
        for path, ops in spec["paths"].items()
        if "get" in ops
        and path.startswith("/api/namespaces/{ns}/")
        and re.findall(r"\{[^}]+\}", path) == ["{ns}"]
    )


def _send(server: ServerProc, method: str, path: str, text: str, token: str) -> tuple[int, Any]:
    return raw(server, method, path, text.encode("ascii"), token)


def _list_everything(server: ServerProc, names: list[str], tokens: dict[str, str]) -> None:
    """Every listing of every namespace of the org answers, none with a 5xx."""
    for ns in names:
        for path in _listing_routes(server):
            for query in ("", "?all=true", "?deleted=true"):
                url = path.replace("{ns}", ns) + query
                status, out = raw(server, "GET", url, None, tokens[ns])
                assert status < 500, (url, status, out)
        status, rows = raw(
            server, "GET", f"/api/namespaces/{ns}/providers?all=true", None, tokens[ns]
        )
        assert status == 200, rows


def test_a_lone_surrogate_is_refused_on_every_route_that_takes_a_body(
    server: ServerProc,
) -> None:
    names, tokens = _org(server)
    first = names[0]
    routes = _body_routes(server)
    for method, path in routes:
        url = re.sub(r"\{[^}]+\}", "x", path.replace("{ns}", first))
        for text, loc in (
            (f'{{"name": "a{SURROGATE}b"}}', ["body", "name"]),
            (f'{{"kwargs": {{"k": ["ok", "h{SURROGATE}"]}}}}', ["body", "kwargs", "k", "1"]),
        ):
            status, out = _send(server, method, url, text, server.admin_token)
            assert status == 422, (method, path, status, out)
            errors = _errors(out)
            assert errors[0]["loc"] == loc, (method, path, out)
            assert "lone surrogate" in errors[0]["msg"], out
    # the ways the registry was broken, written as a user would: nothing is stored
    p = f"/api/namespaces/{first}"
    for method, url, text, loc in (
        (
            "POST",
            f"{p}/providers",
            f'{{"name": "poison", "launcher": "SSH", "kwargs": {{"host": "a{SURROGATE}b"}}}}',
            ["body", "kwargs", "host"],
        ),
        (
            "POST",
            f"{p}/providers",
            f'{{"name": "poison", "launcher": "SSH", "kwargs": {{"h{SURROGATE}": "a"}}}}',
            ["body", "kwargs", "h\\udcff"],
        ),
        (
            "POST",
            f"{p}/modes",
            f'{{"name": "m", "env": {{"A": "{SURROGATE}"}}}}',
            ["body", "env", "A"],
        ),
        ("POST", f"{p}/secrets", f'{{"name": "s9", "value": "caf{SURROGATE}"}}', ["body", "value"]),
        ("PUT", f"{p}/secrets/s9", f'{{"value": "caf{SURROGATE}"}}', ["body", "value"]),
    ):
        status, out = _send(server, method, url, text, tokens[first])
        assert status == 422 and _errors(out)[0]["loc"] == loc, (url, out)
    # the same refusal for the raw bytes of an encoded surrogate (surrogatepass UTF-8)
    body = b'{"name": "poison", "launcher": "SSH", "kwargs": {"host": "a\xed\xb3\xbfb"}}'
    status, out = raw(server, "POST", f"{p}/providers", body, tokens[first])
    assert status == 422, out
    # bytes that are not UTF-8 at all (a Latin-1 shell's é): a 422 naming the field
    body = b'{"name": "poison", "launcher": "SSH", "kwargs": {"host": "a\xe9b"}}'
    status, out = raw(server, "POST", f"{p}/providers", body, tokens[first])
    assert status == 422 and _errors(out)[0]["loc"] == ["body", "kwargs", "host"], out
    assert "not UTF-8" in _errors(out)[0]["msg"]
    # nothing was stored, and every listing of every namespace of the org answers
    _list_everything(server, names, tokens)
    for ns in names:
        status, rows = raw(
            server, "GET", f"/api/namespaces/{ns}/providers?all=true", None, tokens[ns]
        )
        assert rows == []
        status, rows = raw(server, "GET", f"/api/namespaces/{ns}/modes", None, tokens[ns])
        assert status == 200 and rows == []


def _store_rows(server: ServerProc, ns: str) -> None:
    """A provider and a mode holding a lone surrogate, written through the store itself
    (as a server from before the guard stored them), on the server's own database."""
    from dreamlake.controlplane.db import make_engine
    from dreamlake.controlplane.models import Namespace
    from dreamlake.controlplane.registry.models import Mode, Provider
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    engine = make_engine(server.db_url or f"sqlite:///{server.data_dir / 'lakeshore.db'}")
    try:
        with Session(engine) as session:
            ns_id = session.scalar(select(Namespace.id).where(Namespace.name == ns))
            config = {"kwargs": {"host": "a\udcffb", "k\udcfe": "v", "port": 22}}
            session.add(Provider(namespace_id=ns_id, name="poison", kind="SSH", config=config))
            session.add(Mode(namespace_id=ns_id, name="m", env={"A": "caf\udce9"}))
            session.commit()
    finally:
        engine.dispose()


def test_a_stored_row_with_a_lone_surrogate_is_listed_with_the_field_marked(
    server: ServerProc,
) -> None:
    names, tokens = _org(server)
    owner = names[0]
    status, _ = raw(
        server,
        "POST",
        f"/api/namespaces/{owner}/providers",
        json.dumps({"name": "fine", "launcher": "EC2"}).encode(),
        tokens[owner],
    )
    assert status == 201
    _store_rows(server, owner)
    _list_everything(server, names, tokens)
    for ns in names:  # listings span the org: the sibling sees the row too
        status, rows = raw(server, "GET", f"/api/namespaces/{ns}/providers", None, tokens[ns])
        assert status == 200, rows
        by_name = {r["name"]: r for r in rows}
        assert set(by_name) == {"fine", "poison"}
        bad = by_name["poison"]
        assert sorted(bad["invalidText"]) == ["kwargs.host", "kwargs.k\\udcfe"]
        assert bad["kwargs"] == {"host": "a\\udcffb", "k\\udcfe": "v", "port": 22}
        assert "invalidText" not in by_name["fine"]
    status, mode = raw(server, "GET", f"/api/namespaces/{owner}/modes/m", None, tokens[owner])
    assert status == 200 and mode["invalidText"] == ["env.A"], mode
    # a marked row answers its delete (which takes effect) and its restore
    p = f"/api/namespaces/{owner}"
    for method, url in (("DELETE", "poison"), ("POST", "poison/restore")):
        status, out = raw(server, method, f"{p}/providers/{url}", None, tokens[owner])
        assert status == 200 and out["invalidText"], out
    # the repair docs/registry.md describes: replace the kwargs whole, patch the field
    body = json.dumps({"kwargs": {"host": "ab", "port": 22}}).encode()
    status, out = raw(server, "PATCH", f"{p}/providers/poison", body, tokens[owner])
    assert status == 200 and "invalidText" not in out, out
    body = json.dumps({"env": {"A": "café"}}).encode()
    status, out = raw(server, "PATCH", f"{p}/modes/m", body, tokens[owner])
    assert status == 200 and "invalidText" not in out and out["env"] == {"A": "café"}, out
    _list_everything(server, names, tokens)
