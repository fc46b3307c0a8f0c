"""Refused before anything is stored, identically on SQLite and PostgreSQL: deep
nesting, NaN / Infinity / 1e400, huge integers, NUL anywhere (path, query, keys,
values); per-namespace limits (413 / 422); a row that cannot be read does not break
a listing. Real server over HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import secrets
from typing import Any

from lakeshore_fixtures import ServerProc
from test_lakeshore_api import raw

SHARES_SERVER = True  # its tests keep to names of their own: the session's server


def _ns(server: ServerProc) -> tuple[str, str]:
    name = f"v-{secrets.token_hex(4)}"
    server.admin.create_namespace(name)
    return name, server.admin.create_token(name)


def _post(server: ServerProc, token: str, path: str, body: Any) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return raw(server, "POST", path, data, token)


def _listing_ok(server: ServerProc, ns: str, token: str) -> list[Any]:
    status, rows = raw(server, "GET", f"/api/namespaces/{ns}/providers?all=true", None, token)
    assert status == 200, rows
    return rows  # type: ignore[no-any-return]


def test_deep_kwargs_are_refused_and_listings_survive(server: ServerProc) -> None:
    ns, token = _ns(server)
    deep: Any = "leaf"
    for _ in range(300):
        deep = {"a": deep}
    body = {"name": "deep", "launcher": "EC2", "kwargs": deep}
    status, out = _post(server, token, f"/api/namespaces/{ns}/providers", body)
    assert status == 422 and "deeper" in json.dumps(out)
    assert _listing_ok(server, ns, token) == []
    # the default namespace's listing is untouched too
    _listing_ok(server, "default", server.admin_token)


def test_non_finite_and_huge_numbers_are_refused(server: ServerProc) -> None:
    ns, token = _ns(server)
    path = f"/api/namespaces/{ns}/providers"
    for text in ("NaN", "Infinity", "-Infinity", "1e400", "1" * 400):
        raw_body = (f'{{"name": "n", "launcher": "EC2", "kwargs": {{"x": {text}}}}}').encode()
        status, out = _post(server, token, path, raw_body)
        assert status == 422, (text, out)
        assert out["error"] == "validation_error"
    mode = ('{"name": "m", "provider": "p", "timeout_s": %s}' % ("9" * 400)).encode()
    status, _ = _post(server, token, f"/api/namespaces/{ns}/modes", mode)
    assert status == 422
    assert _listing_ok(server, ns, token) == []
    status, modes = raw(server, "GET", f"/api/namespaces/{ns}/modes", None, token)
    assert status == 200 and modes == []


def test_kwargs_round_trip_verbatim(server: ServerProc) -> None:
    ns, token = _ns(server)
    kwargs = {"f": 0.1, "big": 2**62, "neg": -5, "s": "é ✓", "l": [1, 2.5, None, True]}
    status, out = _post(
        server,
        token,
        f"/api/namespaces/{ns}/providers",
        {"name": "rt", "launcher": "EC2", "kwargs": kwargs},
    )
    assert status == 201, out
    assert out["kwargs"] == kwargs


def test_nul_is_refused_everywhere(server: ServerProc) -> None:
    ns, token = _ns(server)
    # in a path parameter, a query and a body key / nested value
    status, out = raw(server, "GET", f"/api/namespaces/{ns}/providers/a%00b", None, token)
    assert status == 422 and out["error"] == "validation_error"
    status, _ = raw(server, "GET", f"/api/namespaces/{ns}/work/x%00y", None, token)
    assert status == 422
    status, _ = raw(server, "GET", f"/api/namespaces/{ns}/providers?hidden=%00", None, token)
    assert status == 422
    for kwargs in ({"k\u0000": 1}, {"k": {"deep": ["ok", "bad\u0000"]}}):
        body = {"name": "nul", "launcher": "EC2", "kwargs": kwargs}
        status, out = _post(server, token, f"/api/namespaces/{ns}/providers", body)
        assert status == 422, out
    status, _ = _post(
        server, token, f"/api/namespaces/{ns}/modes", {"name": "m", "env": {"A": "\u0000"}}
    )
    assert status == 422
    assert _listing_ok(server, ns, token) == []


def test_typed_bodies_say_which_field(server: ServerProc) -> None:
    ns, token = _ns(server)
    status, out = _post(
        server,
        token,
        f"/api/namespaces/{ns}/providers",
        {"name": "x", "launcher": "EC2", "kwargs": []},
    )
    assert status == 422
    assert any("kwargs" in e["loc"] for e in out["errors"])
    status, spec = raw(server, "GET", "/openapi.json", None, None)
    assert status == 200
    for schema in ("ProviderIn", "ProviderPatch", "SecretIn", "ModeIn", "LaunchIn"):
        assert schema in spec["components"]["schemas"], schema


def test_kwargs_size_limit_is_413(server: ServerProc) -> None:
    ns, token = _ns(server)
    body = {"name": "big", "launcher": "EC2", "kwargs": {"blob": "x" * (70 * 1024)}}
    status, out = _post(server, token, f"/api/namespaces/{ns}/providers", body)
    assert status == 413 and "LAKESHORE_MAX_KWARGS_BYTES" in out["detail"]
    assert _listing_ok(server, ns, token) == []


def test_mode_patches_honour_the_kwargs_size_limit(server: ServerProc) -> None:
    """One limit on every write path: patching a mode bit by bit cannot store more
    than LAKESHORE_MAX_KWARGS_BYTES (five 30 KB patches used to store 150 KB)."""
    ns, token = _ns(server)
    assert _post(server, token, f"/api/namespaces/{ns}/modes", {"name": "m"})[0] == 201
    statuses = []
    for i in range(5):
        patch = json.dumps({"env": {f"K{i}": "x" * (30 * 1024)}}).encode()
        status, out = raw(server, "PATCH", f"/api/namespaces/{ns}/modes/m", patch, token)
        statuses.append(status)
        if status == 413:
            assert "LAKESHORE_MAX_KWARGS_BYTES" in out["detail"]
    assert statuses[:2] == [200, 200] and statuses[2:] == [413, 413, 413], statuses
    status, mode = raw(server, "GET", f"/api/namespaces/{ns}/modes/m", None, token)
    assert status == 200 and sorted(mode["env"]) == ["K0", "K1"]


def test_org_on_default_and_scoped_listings(server: ServerProc) -> None:
    """New installs list only their own namespace's rows; ``default`` can join an org."""
    a, ta = _ns(server)
    b, tb = _ns(server)
    assert (
        _post(server, ta, f"/api/namespaces/{a}/providers", {"name": "pa", "launcher": "EC2"})[0]
        == 201
    )
    assert [r["name"] for r in _listing_ok(server, b, tb)] == []  # b does not see a's rows
    org = f"org-{secrets.token_hex(3)}"
    for ns in (a, b):
        req = json.dumps({"orgId": org}).encode()
        status, out = raw(server, "PATCH", f"/api/namespaces/{ns}", req, server.admin_token)
        assert status == 200 and out["orgId"] == org
    assert [r["name"] for r in _listing_ok(server, b, tb)] == ["pa"]
    status, out = raw(
        server,
        "PATCH",
        "/api/namespaces/default",
        json.dumps({"orgId": org}).encode(),
        server.admin_token,
    )
    assert status == 200 and out["orgId"] == org
    status, out = raw(
        server,
        "PATCH",
        "/api/namespaces/default",
        json.dumps({"orgId": None}).encode(),
        server.admin_token,
    )
    assert status == 200 and out["orgId"] is None


def _store_raw_provider(server: ServerProc, ns: str, name: str, config_text: str) -> None:
    """Put a row in the database behind the API's back (a row from an older server)."""
    if server.db_url:
        import psycopg

        conn = psycopg.connect(server.db_url)
        with conn, conn.cursor() as cur:
            cur.execute("SELECT id FROM namespaces WHERE name = %s", (ns,))
            ns_id = cur.fetchone()[0]
            cur.execute(
                "INSERT INTO providers (namespace_id, name, kind, config, hidden, created_at, updated_at)"
                " VALUES (%s, %s, 'EC2', %s::json, false, now(), now())",
                (ns_id, name, config_text),
            )
        conn.close()
    else:
        import sqlite3

        conn = sqlite3.connect(server.data_dir / "lakeshore.db")
        with conn:
            ns_id = conn.execute("SELECT id FROM namespaces WHERE name = ?", (ns,)).fetchone()[0]
            conn.execute(
                "INSERT INTO providers (namespace_id, name, kind, config, hidden, created_at, updated_at)"
                " VALUES (?, ?, 'EC2', ?, 0, datetime('now'), datetime('now'))",
                (ns_id, name, config_text),
            )
        conn.close()


def test_an_unreadable_row_never_breaks_a_listing(server: ServerProc) -> None:
    ns, token = _ns(server)
    assert (
        _post(
            server, token, f"/api/namespaces/{ns}/providers", {"name": "fine", "launcher": "EC2"}
        )[0]
        == 201
    )
    deep = '{"kwargs": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}"
    _store_raw_provider(server, ns, "deep", deep)
    rows = {r["name"]: r for r in _listing_ok(server, ns, token)}
    assert set(rows) == {"fine", "deep"}
    assert "unreadable" in rows["deep"] and "unreadable" not in rows["fine"]
    # repairable through the API: a whole kwargs replacement, then it reads normally
    body = json.dumps({"kwargs": {"region": "us-east-1"}}).encode()
    status, out = raw(server, "PATCH", f"/api/namespaces/{ns}/providers/deep", body, token)
    assert status == 200 and out["kwargs"] == {"region": "us-east-1"}
    assert "unreadable" not in {r["name"]: r for r in _listing_ok(server, ns, token)}["deep"]
