"""``/docs`` works offline: the page and every asset it loads come from this server,
and it names no other host (a real server subprocess on 127.0.0.1)."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

from lakeshore_fixtures import ServerProc

SHARES_SERVER = True  # its tests keep to names of their own: the session's server


def _get(server: ServerProc, path: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=10) as r:
            return r.status, r.headers.get("content-type", ""), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("content-type", ""), exc.read()


def test_the_docs_page_loads_only_from_this_server(server: ServerProc) -> None:
    status, ctype, raw = _get(server, "/docs")
    assert status == 200 and ctype.startswith("text/html")
    page = raw.decode()
    assert not re.search(r"https?://|//[a-z]", page), "the page names another host"
    assert '"validatorUrl": null' in page  # Swagger UI's default asks a website
    loaded = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sorted(loaded) == [
        "/docs/assets/favicon-32x32.png",
        "/docs/assets/swagger-ui-bundle.js",
        "/docs/assets/swagger-ui.css",
    ]
    kinds = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
    for path in loaded:
        status, ctype, body = _get(server, path)
        assert status == 200 and body, path
        assert ctype.startswith(kinds[path[path.rindex(".") :]]), (path, ctype)
    assert b"SwaggerUIBundle" in _get(server, "/docs/assets/swagger-ui-bundle.js")[2]
    assert _get(server, "/openapi.json")[0] == 200


def test_only_the_pages_assets_are_served(server: ServerProc) -> None:
    for path in ("/docs/assets/index.html", "/docs/assets/..%2F__init__.py", "/docs/assets/x"):
        status, ctype, _ = _get(server, path)
        assert status == 404 and ctype.startswith("application/problem+json"), path
