"""Every route × every kind of token, against a real ``lakeshore serve`` on each
backend: a daemon's token gets 403 outside its own worker routes, and 0 ways into
another provider or namespace; an org sibling reads and never writes; no token at
all is 401 on everything but health, before any body is read."""

from __future__ import annotations

import functools
import json
import re
import secrets
import socket
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from dreamlake.controlplane.server.access import scopes
from lakeshore_fixtures import ServerProc

SHARES_SERVER = (
    True  # its tests keep to namespaces, tokens and names of their own: the session's server
)


@functools.cache
def _app() -> Any:
    """The app as ``lakeshore serve`` builds it, once for the module's reads of it."""
    from dreamlake.controlplane.server.app import create_app
    from dreamlake.controlplane.server.settings import Settings

    return create_app(Settings.from_env(data_dir=tempfile.mkdtemp(prefix="scopes-")))


def _app_routes() -> set[tuple[str, str]]:
    paths = _app().openapi()["paths"]
    return {(m.upper(), p) for p, ops in paths.items() for m in ops}


def test_every_route_declares_its_scope() -> None:
    routes = _app_routes()
    undeclared = sorted(r for r in routes if r not in scopes.ROUTES)
    assert undeclared == [], f"declare these in controlplane/server/access/scopes.py: {undeclared}"
    stale = sorted(
        r for r in scopes.ROUTES if r not in routes and r[1] not in ("/docs", "/openapi.json")
    )
    # /docs and the dashboard (/ui) are not in the schema: test_docs_ui.py, test_dashboard.py
    assert [r for r in stale if not r[1].startswith(("/docs", "/ui"))] == []
    assert set(scopes.ROUTES.values()) <= set(scopes.NEEDS)


def test_a_route_without_a_rule_stops_the_server() -> None:
    ns = "/api/namespaces/{ns}/brand-new"
    with pytest.raises(scopes.UndeclaredRoutes) as err:
        scopes.rules_for([({"GET", "HEAD"}, ns), ({"POST"}, "/api/new")])
    assert err.value.missing == [("GET", ns), ("POST", "/api/new")]
    assert "GET /api/namespaces/{ns}/brand-new" in str(err.value)


def test_the_app_refuses_to_start_with_an_undeclared_route(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dreamlake.controlplane.server import app as app_module
    from dreamlake.controlplane.server.settings import Settings

    real = app_module.include_routers

    def with_one_more(app: Any) -> list[str]:
        mounted = real(app)
        app.add_api_route("/api/namespaces/{ns}/sneaky/{x:path}", lambda: None, methods=["DELETE"])
        return mounted

    monkeypatch.setattr(app_module, "include_routers", with_one_more)
    with pytest.raises(scopes.UndeclaredRoutes, match="sneaky"):
        app_module.create_app(Settings.from_env(data_dir=tmp_path / "data"))


def _app_rules() -> list[scopes.Rule]:
    rules: list[scopes.Rule] = _app().state.route_rules
    return rules


def test_the_gate_reads_the_routers_own_paths() -> None:
    rules = _app_rules()
    (rule,) = [r for r in rules if r.template == scopes.NS + "/instances/{instance_id}"]
    # the router's {instance_id:path}: an SSH instance id holds "/"
    found = scopes.match("DELETE", "/api/namespaces/a/instances/u@h:2222/lakeshore-x", rules)
    assert (found.need, found.template, found.ns) == ("write", rule.template, "a")
    assert scopes.match("GET", "/nothing", rules).need == "public"
    assert scopes.match("POST", "/nothing", rules).need == "caller"


# -- the live matrix ------------------------------------------------------------------


def _call(
    server: ServerProc, method: str, path: str, token: str | None, body: Any = None
) -> tuple[int, Any]:
    data = None
    if method in ("POST", "PUT", "PATCH"):
        data = json.dumps({} if body is None else body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            if not r.headers.get("Content-Type", "").startswith("application/json"):
                return r.status, raw  # /metrics: Prometheus' text format
            return r.status, json.loads(raw) if raw.strip() else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, raw


class World:
    """Namespace ``mine`` (org ``o``) with providers p1 and p2, sibling ``sib`` (same
    org), stranger ``far`` (no org), and a token of every kind."""

    def __init__(self, server: ServerProc) -> None:
        tag = secrets.token_hex(3)
        self.mine, self.sib, self.far = f"mine-{tag}", f"sib-{tag}", f"far-{tag}"
        admin = server.admin
        admin.create_namespace(self.mine, org_id=f"o-{tag}")
        admin.create_namespace(self.sib, org_id=f"o-{tag}")
        admin.create_namespace(self.far)
        self.admin = server.admin_token
        self.own = admin.create_token(self.mine, label="person")
        self.sibling = admin.create_token(self.sib, label="sibling")
        self.stranger = admin.create_token(self.far, label="stranger")
        mint = admin.create_token
        self.d1 = mint(self.mine, label="d1", scope="daemon", provider="p1", host="h1")
        self.d2 = mint(self.mine, label="d2", scope="daemon", provider="p2", host="h2")
        self.d_sib = mint(self.sib, label="ds", scope="daemon", provider="p1", host="h1")
        self.metrics = mint(self.mine, label="prometheus", scope="metrics")
        self.bootstrap = mint(self.mine, label="boot", scope="bootstrap", provider="p1")
        me = server.client(self.own, namespace=self.mine)
        self.w1 = me.register("p1", "inst-1", queues=["q"])["workerId"]
        self.w2 = me.register("p2", "inst-2", queues=["q"])["workerId"]
        self.work = me.submit_work("p1", "true")["id"]
        self.tokens = {
            "none": None,
            "admin": self.admin,
            "own": self.own,
            "sibling": self.sibling,
            "stranger": self.stranger,
            "daemon": self.d1,
            "daemon-other-provider": self.d2,
            "daemon-of-sibling": self.d_sib,
            "metrics": self.metrics,
            "bootstrap": self.bootstrap,
        }

    def path(self, template: str) -> str:
        values = {
            "ns": self.mine,
            "name": "p1",
            "worker_id": self.w1,
            "work_id": self.work,
            "token_id": "9223372036854775807",
            "sha256": "0" * 64,
            "instance_id": "i-none",
            "lease_id": "lease-none",
        }
        return re.sub(r"\{([a-z_0-9]+)\}", lambda m: values[m.group(1)], template)


@pytest.fixture(scope="module")
def world(server: ServerProc) -> World:
    return World(server)


def _expected(need: str, who: str, template: str) -> str:
    """ "401", "403" or "in" (past the gate: whatever the route answers)."""
    if "{ns}" not in template and who in ("stranger", "sibling"):
        who = "own"  # a listing of the caller's own namespace
    if "{ns}" not in template and who == "daemon-of-sibling":
        who = "daemon"
    if need == "public":
        return "in"
    if who == "none":
        return "401"
    if who == "admin" or need == "caller":
        return "in"
    if who == "bootstrap":  # good only to ask for its daemon's certificate (and the bundle)
        return "in" if need in ("enroll", "bundle") else "403"
    if need == "bundle":  # for everyone else, a worker route
        need = "worker"
    if need == "enroll":  # or a daemon of the namespace renewing its own
        return "in" if who in ("daemon", "daemon-other-provider") else "403"
    if need == "metrics" or who == "metrics":
        return "in" if need == who else "403"
    if need == "admin":
        return "403"
    if who in ("stranger", "daemon-of-sibling"):
        return "403"
    if who == "sibling":
        return "in" if need == "read" else "403"
    if who.startswith("daemon"):
        return "in" if need == "worker" else "403"
    return "in"  # own namespace token


# routes an allowed caller would change for the rest of the module: only their
# refusals are sent (what is let in is proven on the read and worker routes)
_CHANGES = ("DELETE", "POST", "PUT", "PATCH")
_WORKER_SAFE = {
    ("POST", scopes.NS + "/workers/{worker_id}/heartbeat"),
    ("GET", scopes.NS + "/workers/{worker_id}/work"),
}


def test_every_route_by_every_token(server: ServerProc, world: World) -> None:
    wrong: list[str] = []
    for (method, template), need in sorted(scopes.ROUTES.items()):
        if template.startswith(("/docs", "/ui")):
            continue  # the dashboard takes a session cookie, not a token: test_dashboard.py
        for who, token in world.tokens.items():
            expect = _expected(need, who, template)
            if expect == "in" and method in _CHANGES and (method, template) not in _WORKER_SAFE:
                continue
            path = world.path(template)
            if (method, template) == ("GET", scopes.NS + "/workers/{worker_id}/work"):
                path += "?wait=0"
            status, body = _call(server, method, path, token)
            got = str(status) if status in (401, 403) else "in"
            if who == "daemon-other-provider" and (method, template) in _WORKER_SAFE:
                expect = "403"  # p2's token, p1's worker
            if got != expect:
                wrong.append(f"{who:>22} {method} {template}: {status} {body}")
    assert wrong == [], "\n".join(wrong)


def test_a_daemon_token_works_for_its_own_provider(server: ServerProc, world: World) -> None:
    ns = f"/api/namespaces/{world.mine}"
    status, out = _call(server, "POST", ns + "/workers", world.d1, _worker("p1", "d-own"))
    assert status == 201, out
    wid = out["workerId"]
    assert _call(server, "POST", f"{ns}/workers/{wid}/heartbeat", world.d1)[0] == 200
    assert _call(server, "GET", f"{ns}/workers/{wid}/work?wait=0", world.d1)[0] in (200, 204)
    assert _call(server, "DELETE", f"{ns}/workers/{wid}", world.d1)[0] == 204


def _worker(provider: str, instance: str) -> dict[str, Any]:
    return {"providerName": provider, "instanceId": instance, "queues": ["q"]}


def test_no_way_into_another_provider(server: ServerProc, world: World) -> None:
    """p2's daemon token: cannot register as p1's worker, beat, poll, report or
    deregister for p1's worker, submit work, read p1's claims or secrets."""
    ns = f"/api/namespaces/{world.mine}"
    d2 = world.d2
    refused = [
        _call(server, "POST", ns + "/workers", d2, _worker("p1", "ghost")),
        _call(server, "POST", f"{ns}/workers/{world.w1}/heartbeat", d2),
        _call(server, "GET", f"{ns}/workers/{world.w1}/work?wait=0", d2),
        _call(server, "DELETE", f"{ns}/workers/{world.w1}", d2),
        _call(
            server,
            "POST",
            f"{ns}/workers/{world.w1}/work/{world.work}/result",
            d2,
            {"exitCode": 0},
        ),
        _call(server, "POST", ns + "/providers/p1/work", d2, {"command": "id"}),
        _call(server, "POST", ns + "/providers/p2/work", d2, {"command": "id"}),
        _call(server, "PUT", ns + "/secrets/aws", d2, {"value": "x"}),
        _call(server, "POST", ns + "/launch", d2, {"provider": "p2"}),
        _call(server, "DELETE", ns + "/instances/i-1", d2),
        _call(server, "GET", ns + "/providers/p1/claims", d2),
        _call(server, "POST", f"/api/namespaces/{world.sib}/workers", d2, _worker("p2", "x")),
    ]
    assert [s for s, _ in refused] == [403] * len(refused), refused
    # p1's worker is still there, untouched
    me = server.client(world.own, namespace=world.mine)
    assert any(w["workerId"] == world.w1 for w in me.workers("p1"))
    item = me.get_work(world.work)
    # p2's refused result left no trace (p1's own daemon token may have claimed the
    # item in an earlier test of this module, and gone: the item is then lost, not done)
    assert item["state"] != "succeeded" and item.get("exitCode") is None, item
    assert not any(w["instanceId"] == "ghost" for w in me.workers("p1"))


def test_hot_path_heartbeat_keeps_to_the_provider(server: ServerProc, world: World) -> None:
    """Once the server knows every worker and both tokens (the hot path answers
    from memory), p2's token still cannot beat for p1's worker."""
    ns = f"/api/namespaces/{world.mine}"
    assert _call(server, "POST", f"{ns}/workers/{world.w2}/heartbeat", world.d2)[0] == 200
    assert _call(server, "POST", f"{ns}/workers/{world.w1}/heartbeat", world.own)[0] == 200
    for _ in range(3):
        assert _call(server, "POST", f"{ns}/workers/{world.w1}/heartbeat", world.d2)[0] == 403
        assert _call(server, "POST", f"{ns}/workers/{world.w2}/heartbeat", world.d2)[0] == 200


def test_org_siblings_are_read_only(server: ServerProc, world: World) -> None:
    ns = f"/api/namespaces/{world.mine}"
    sib = world.sibling
    writes = [
        _call(server, "PUT", ns + "/secrets/aws", sib, {"value": "x"}),
        _call(server, "DELETE", ns + "/providers/p1", sib),
        _call(server, "POST", ns + "/providers/p1/work", sib, {"command": "id"}),
        _call(server, "DELETE", f"{ns}/workers/{world.w1}", sib),
        _call(server, "DELETE", ns + "/queues/q", sib),
        _call(server, "POST", ns + "/workers", sib, _worker("p1", "sib")),
    ]
    assert [s for s, _ in writes] == [403] * len(writes), writes
    assert "read-only" in json.dumps(writes[0][1])
    reads = [
        _call(server, "GET", ns + "/providers/p1/claims", sib),
        _call(server, "GET", ns + "/workers", sib),
        _call(server, "GET", ns + "/providers", sib),
    ]
    assert [s for s, _ in reads] == [200] * len(reads), reads


def test_an_instance_token_is_pinned_to_its_first_instance(server: ServerProc) -> None:
    """A launch's instance token (scope daemon, instance pinned on first register)
    registers its own instance only."""
    from dreamlake.controlplane.db import make_engine, make_sessionmaker
    from dreamlake.controlplane.launch.tokens import _mint

    url = server.db_url or f"sqlite:///{server.data_dir / 'lakeshore.db'}"
    engine = make_engine(url)
    try:
        with make_sessionmaker(engine)() as session:
            from dreamlake.controlplane.models import Namespace
            from sqlalchemy import select

            ns_id = session.scalar(select(Namespace.id).where(Namespace.name == "default"))
            token, _tid = _mint(session, ns_id, "instance pin test", "pinned")
            second, _tid2 = _mint(session, ns_id, "instance pin test 2", "pinned")
            session.commit()
    finally:
        engine.dispose()
    ns = "/api/namespaces/default"
    first = _call(server, "POST", ns + "/workers", token, _worker("pinned", "i-a"))
    assert first[0] == 201, first
    assert _call(server, "POST", ns + "/workers", token, _worker("pinned", "i-a"))[0] == 200
    assert _call(server, "POST", ns + "/workers", token, _worker("pinned", "i-b"))[0] == 403
    assert _call(server, "POST", ns + "/workers", token, _worker("other", "i-a"))[0] == 403
    who = _call(server, "GET", "/api/whoami", token)[1]
    assert who["scope"] == "daemon" and who["provider"] == "pinned"
    # two instances of one provider: each beats for its own worker only, also once
    # the server knows both (the hot path)
    wa = first[1]["workerId"]
    other = _call(server, "POST", ns + "/workers", second, _worker("pinned", "i-c"))
    assert other[0] == 201, other
    wc = other[1]["workerId"]
    for _ in range(3):
        assert _call(server, "POST", f"{ns}/workers/{wa}/heartbeat", token)[0] == 200
        assert _call(server, "POST", f"{ns}/workers/{wc}/heartbeat", second)[0] == 200
        assert _call(server, "POST", f"{ns}/workers/{wc}/heartbeat", token)[0] == 403
        assert _call(server, "GET", f"{ns}/workers/{wc}/work?wait=1", token)[0] == 403


# -- nothing unauthenticated costs the server -----------------------------------------


def _raw_exchange(server: ServerProc, head: bytes, timeout: float = 5.0) -> tuple[float, bytes]:
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        started = time.monotonic()
        sock.sendall(head)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return time.monotonic() - started, data


@pytest.mark.parametrize("token", ["", "Bearer lks_not-a-real-token"])
def test_refused_before_the_body_is_read(server: ServerProc, world: World, token: str) -> None:
    """A body announced but never sent (10 MB, well past any limit): the answer
    (401) comes at once, so the server never waited for, read or parsed it."""
    auth = f"Authorization: {token}\r\n" if token else ""
    head = (
        f"POST /api/namespaces/{world.mine}/secrets HTTP/1.1\r\nHost: x\r\n{auth}"
        "Content-Type: application/json\r\nContent-Length: 10485760\r\n\r\n"
    ).encode()
    took, data = _raw_exchange(server, head)
    assert data.startswith(b"HTTP/1.1 401"), data[:200]
    assert took < 3.0


def test_a_daemon_is_refused_before_its_body_is_read(server: ServerProc, world: World) -> None:
    head = (
        f"PUT /api/namespaces/{world.mine}/secrets/aws HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {world.d1}\r\n"
        "Content-Type: application/json\r\nContent-Length: 10485760\r\n\r\n"
    ).encode()
    took, data = _raw_exchange(server, head)
    assert data.startswith(b"HTTP/1.1 403"), data[:200]
    assert took < 3.0


def test_healthz_and_readyz(server: ServerProc) -> None:
    assert _call(server, "GET", "/healthz", None)[0] == 200
    status, out = _call(server, "GET", "/readyz", None)
    assert status == 200 and out["status"] == "ready", out


def test_a_huge_token_id_is_404(server: ServerProc) -> None:
    for tid in ("9223372036854775808", "99999999999999999999999", "0", "-1"):
        status, out = _call(server, "DELETE", f"/api/tokens/{tid}", server.admin_token)
        assert status in (404, 422), (tid, status, out)
    assert _call(server, "DELETE", "/api/tokens/9223372036854775808", server.admin_token)[0] == 404


# -- expiry is exact ----------------------------------------------------------------


def test_an_expired_token_stops_at_its_expiry(server: ServerProc) -> None:
    """The token cache never outlives a token: used (and cached) just before its
    expiry, refused just after (not up to a minute later)."""
    token = server.admin.create_token("default", label="brief", expires_in=2)
    ns = "/api/namespaces/default"
    deadline = time.monotonic() + 2.0
    assert _call(server, "GET", ns + "/providers", token)[0] == 200  # cached now
    assert _call(server, "GET", "/api/whoami", token)[0] == 200
    while time.monotonic() < deadline + 0.3:
        time.sleep(0.05)
    assert _call(server, "GET", ns + "/providers", token)[0] == 401
    assert _call(server, "GET", "/api/whoami", token)[0] == 401
    assert _call(server, "POST", ns + "/workers", token, _worker("p", "i"))[0] == 401


# -- path parameters that hold what a path segment should not ------------------------

ODD = ("a/b", "a%2Fb", "..", "../../x", "%2E%2E", "ü/ñ", "root@127.0.0.1:2222/lakeshore-p1-1")


def test_every_route_with_odd_path_parameters(server: ServerProc, world: World) -> None:
    """Each route's parameters (but the namespace) set to a ``/``, a ``%2F``, ``..``
    and unicode: whatever route the router sends it to, the gate applied that
    route's rule; a token the rule refuses is refused (401/403), never let in."""
    rules = _app_rules()
    refused_by: dict[str, str] = {}
    wrong: list[str] = []
    for (method, template), _need in sorted(scopes.ROUTES.items()):
        params = [p for p in re.findall(r"\{([a-z_0-9]+)\}", template) if p != "ns"]
        if not params or template.startswith(("/docs", "/ui")):
            continue  # /ui/assets/{asset}: test_dashboard.py
        for odd in ODD:
            raw = world.path(template)
            for p in params:
                raw = raw.replace(world.path("{" + p + "}"), odd, 1)
            decoded = urllib.request.unquote(raw)
            found = scopes.match(method, decoded, rules)
            for who in ("none", "sibling", "stranger", "daemon-other-provider"):
                expect = _expected(found.need, who, found.template or "")
                if found.template is None:
                    expect = "404" if method in ("GET", "HEAD") or who != "none" else "401"
                if expect == "in":
                    continue  # a refusal is the claim under test
                quoted = urllib.request.quote(raw, safe="/%@:")
                status, body = _call(server, method, quoted, world.tokens[who])
                got = str(status) if status in (401, 403, 404, 405) else f"in ({status})"
                if expect == "404" and got in ("404", "405"):
                    continue
                if got != expect:
                    wrong.append(f"{who:>22} {method} {quoted}: {status} {body}")
                refused_by[who] = got
    assert wrong == [], "\n".join(wrong)
    assert refused_by  # the matrix ran


def test_an_instance_token_cannot_end_another_providers_ssh_instance(
    server: ServerProc, world: World
) -> None:
    ns = f"/api/namespaces/{world.mine}"
    for iid in ("root@127.0.0.1:2222/lakeshore-p1-1", "root@127.0.0.1:2222%2Flakeshore-p1-1"):
        for who in ("daemon-other-provider", "daemon", "sibling"):
            status, body = _call(server, "DELETE", f"{ns}/instances/{iid}", world.tokens[who])
            assert status == 403, (who, iid, status, body)
