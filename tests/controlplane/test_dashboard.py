"""``/ui`` on a real ``lakeshore serve`` over HTTP (each backend): the sign-in form,
the session cookie and its attributes, who may open the page (admin and metrics
tokens; never a namespace's or a daemon's), revocation ending a session, the panel's
content, the assets served by the server itself, and the route table."""

from __future__ import annotations

import http.client
import time
import urllib.parse
import uuid
from typing import Any

import pytest
from dreamlake.controlplane.server.access import scopes
from dreamlake.controlplane.server.ui import session as sessions
from dreamlake.controlplane.server.ui import view
from lakeshore_fixtures import ServerProc

SHARES_SERVER = True  # its tests keep to names of their own: the session's server

Answer = tuple[int, dict[str, str], str]


def _ask(
    server: ServerProc,
    method: str,
    path: str,
    *,
    cookie: str | None = None,
    form: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """One request, redirects not followed."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    sent = dict(headers or {})
    body = None
    if cookie is not None:
        sent["Cookie"] = f"{sessions.COOKIE}={cookie}"
    if form is not None:
        body = urllib.parse.urlencode(form).encode()
        sent["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        conn.request(method, path, body=body, headers=sent)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        conn.close()


def _sign_in(server: ServerProc, token: str) -> str:
    status, headers, body = _ask(server, "POST", "/ui/login", form={"token": token})
    assert status == 303, body
    assert headers["location"] == "/ui"
    value = headers["set-cookie"].split(";")[0].partition("=")[2]
    assert value
    return value


@pytest.fixture(scope="module")
def ns(server: ServerProc) -> tuple[str, str]:
    name = "dash-" + uuid.uuid4().hex[:6]
    server.admin.create_namespace(name)
    return name, server.admin.create_token(name)


def test_the_sign_in_form_and_the_cookie(server: ServerProc) -> None:
    status, headers, body = _ask(server, "GET", "/ui/login")
    assert status == 200 and 'name="token"' in body
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "same-origin"  # the form's POST carries its Origin
    status, headers, _ = _ask(server, "POST", "/ui/login", form={"token": server.admin_token})
    assert status == 303 and headers["location"] == "/ui"
    attrs = [a.strip() for a in headers["set-cookie"].split(";")]
    assert attrs[0].startswith(sessions.COOKIE + "=")
    assert server.admin_token not in headers["set-cookie"]  # sealed, never in clear
    assert {"HttpOnly", "SameSite=Strict", "Path=/ui"} <= set(attrs)
    assert "Secure" not in attrs  # plain HTTP here (Secure when the server is HTTPS)


def test_secure_over_https() -> None:
    assert "; Secure" in sessions.set_cookie("v", secure=True)
    assert "Secure" not in sessions.set_cookie("v", secure=False)


def test_without_a_session_the_page_sends_to_the_form(server: ServerProc) -> None:
    status, headers, _ = _ask(server, "GET", "/ui", headers={"Accept": "text/html"})
    assert status == 303 and headers["location"] == "/ui/login"
    status, _, body = _ask(server, "GET", "/ui/panel")  # the script's request: a 401
    assert status == 401 and "sign in at /ui/login" in body
    assert _ask(server, "GET", "/ui", cookie="forged")[0] == 401
    # a bearer token is not a session
    status, _, _ = _ask(
        server, "GET", "/ui/panel", headers={"Authorization": f"Bearer {server.admin_token}"}
    )
    assert status == 401


def test_who_may_sign_in(server: ServerProc, ns: tuple[str, str]) -> None:
    name, token = ns
    daemon = server.admin.create_token(name, scope="daemon", provider="box")
    for refused in (token, daemon):
        status, _, body = _ask(server, "POST", "/ui/login", form={"token": refused})
        assert status == 403 and "admin token or a metrics token" in body
    status, _, body = _ask(server, "POST", "/ui/login", form={"token": "lks_nope"})
    assert status == 401 and "unknown, revoked or expired" in body
    assert _ask(server, "POST", "/ui/login", form={})[0] == 401
    # a form posted from another site's page
    status, _, _ = _ask(
        server,
        "POST",
        "/ui/login",
        form={"token": server.admin_token},
        headers={"Origin": "http://elsewhere.example"},
    )
    assert status == 403
    status, _, _ = _ask(  # a page that hides where it is (Referrer-Policy: no-referrer)
        server, "POST", "/ui/login", form={"token": server.admin_token}, headers={"Origin": "null"}
    )
    assert status == 403
    metrics = server.admin.create_token(name, scope="metrics")
    assert _ask(server, "GET", "/ui", cookie=_sign_in(server, metrics))[0] == 200


def test_revoking_the_token_ends_the_session(server: ServerProc, ns: tuple[str, str]) -> None:
    name, _ = ns
    label = "dash-" + uuid.uuid4().hex[:6]
    token = server.admin.create_token(name, label=label, scope="metrics")
    cookie = _sign_in(server, token)
    assert _ask(server, "GET", "/ui/panel", cookie=cookie)[0] == 200
    rows = server.admin.request("GET", "/api/tokens")
    rows = rows.get("tokens", rows) if isinstance(rows, dict) else rows
    token_id = next(r["id"] for r in rows if r.get("label") == label)
    server.admin.request("DELETE", f"/api/tokens/{token_id}")
    deadline = time.monotonic() + 30  # well within the 60 s a cached token is kept
    while _ask(server, "GET", "/ui/panel", cookie=cookie)[0] == 200:
        assert time.monotonic() < deadline, "the session outlived its revoked token"
        time.sleep(0.1)
    assert _ask(server, "GET", "/ui/panel", cookie=cookie)[0] == 401


def test_sign_out_clears_the_cookie(server: ServerProc) -> None:
    status, headers, _ = _ask(server, "POST", "/ui/logout")
    assert status == 303 and headers["location"] == "/ui/login"
    assert "Max-Age=0" in headers["set-cookie"]


def test_the_panel_shows_the_namespace(server: ServerProc, ns: tuple[str, str]) -> None:
    name, token = ns
    client = server.client(token, namespace=name)
    client.create_provider_row({"name": "lab", "launcher": "SSH", "kwargs": {}})
    worker = client.register("lab", "i-" + uuid.uuid4().hex[:8], host="<b>h1")["workerId"]
    client.submit_work("lab", "true")
    observed = {"status": "ready", "drift": {"count": 1, "resources": ["aws_instance.box"]}}
    client.request("PUT", f"/api/namespaces/{name}/providers/lab/observed", observed)
    cookie = _sign_in(server, server.admin_token)
    status, headers, page = _ask(server, "GET", f"/ui?ns={name}", cookie=cookie)
    assert status == 200 and headers["cache-control"] == "no-store"
    assert f'data-ns="{name}"' in page and '<script src="/ui/assets/dashboard.js">' in page
    status, _, panel = _ask(server, "GET", f"/ui/panel?ns={name}", cookie=cookie)
    assert status == 200
    assert 'data-name="lab"' in panel
    assert "&lt;b&gt;h1" in panel and "<b>h1" not in panel  # escaped
    assert f'data-worker-id="{worker}" data-state="live"' in panel
    assert "1 / 0" in panel  # live / gone
    assert "<td>ready <span" in panel and "1 drifted: aws_instance.box" in panel
    assert _ask(server, "GET", "/ui?ns=no-such-ns", cookie=cookie)[0] == 404


def test_the_assets_are_the_servers_own(server: ServerProc) -> None:
    for asset, kind in (("dashboard.js", "text/javascript"), ("dashboard.css", "text/css")):
        status, headers, body = _ask(server, "GET", f"/ui/assets/{asset}")
        assert status == 200 and headers["content-type"].startswith(kind) and body
        assert "http://" not in body and "https://" not in body
    for other in ("page.html", "..%2Fsession.py", "..%2F..%2Fapp.py", "%2E%2E"):
        assert _ask(server, "GET", f"/ui/assets/{other}")[0] == 404


def test_the_routes_rules() -> None:
    assert scopes.ROUTES[("GET", "/ui")] == "session"
    assert scopes.ROUTES[("GET", "/ui/panel")] == "session"
    assert scopes.ROUTES[("POST", "/ui/login")] == "public"
    assert scopes.refusal("session", scope="metrics", own=True, sibling=False) is None
    assert scopes.refusal("session", scope="admin", own=True, sibling=False) is None
    for scope in ("namespace", "daemon"):
        assert scopes.refusal("session", scope=scope, own=True, sibling=False) is not None


class _Box:
    """The server's SecretBox, for the seal's own tests."""

    def __init__(self) -> None:
        from dreamlake.controlplane.registry.crypto import SecretBox, generate_key

        self.box = SecretBox(generate_key())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.box, name)


def test_a_session_is_sealed_and_runs_out() -> None:
    box = _Box()
    value = sessions.seal(box, "lks_secret", now=1000)
    assert "lks_secret" not in value
    assert sessions.unseal(box, value, now=1000 + 60) == "lks_secret"
    assert sessions.unseal(box, value, now=1000 + sessions.SESSION_SECONDS) is None
    assert sessions.unseal(_Box(), value, now=1000) is None  # another key
    assert sessions.unseal(box, value[:-2], now=1000) is None
    assert sessions.unseal(None, value) is None


def test_ages() -> None:
    from datetime import datetime, timedelta

    now = datetime(2026, 1, 1)
    assert view.age(None, now) == "-"
    assert view.age(now - timedelta(seconds=5), now) == "5s"
    assert view.age(now - timedelta(minutes=3), now) == "3m"
    assert view.age(now - timedelta(hours=2), now) == "2h"
    assert view.age(now - timedelta(days=4), now) == "4d"
    assert view.age(now + timedelta(seconds=30), now) == "in 30s"
