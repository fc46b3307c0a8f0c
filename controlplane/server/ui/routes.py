"""The dashboard's routes (see the package's docstring and docs/dashboard.md).

    GET  /ui                the page: a namespace's panel (``?ns=``, else the first)
    GET  /ui/panel          the panel alone, which the page's script swaps in place
    GET  /ui/login          the sign-in form
    POST /ui/login          form field ``token`` → the session cookie, then /ui
    POST /ui/logout         the session cookie cleared, then /ui/login
    GET  /ui/assets/{name}  the page's script and stylesheet, from this package

The access gate checks the session for ``/ui`` and ``/ui/panel`` (need
``session`` in ``access/scopes.py``) before these run.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from ..errors import ApiError
from . import session as sessions
from .view import SHOWN, namespace_view, namespaces

router = APIRouter(include_in_schema=False)
HERE = Path(__file__).parent
REFRESH_SECONDS = 2
"""How often the page asks for its panel again."""

ASSETS = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}
HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # same-origin: a form posted from the page carries its Origin (checked at sign-in)
    "Referrer-Policy": "same-origin",
    # the page's own script and style only: no inline script, nothing from elsewhere
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
}


@cache
def _templates() -> Any:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    return Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        auto_reload=False,
    )


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = _templates().get_template(name).render(**context)
    return HTMLResponse(html, status, headers=HEADERS)


def _read(request: Request, ns: str | None) -> tuple[list[str], str | None, Any]:
    state = request.app.state
    with state.sessionmaker() as db:
        names = namespaces(db)
        current = ns if ns is not None else (names[0] if names else None)
        view = namespace_view(db, state, current) if current is not None else None
    if current is not None and view is None:
        raise ApiError(404, "not_found", f"no namespace named {current!r}")
    return names, current, view


@router.get("/ui")
def page(request: Request, ns: str | None = None) -> HTMLResponse:
    names, current, view = _read(request, ns)
    return render(
        "page.html",
        namespaces=names,
        current=current,
        view=view,
        refresh=REFRESH_SECONDS,
        shown=SHOWN,
    )


@router.get("/ui/panel")
def panel(request: Request, ns: str | None = None) -> HTMLResponse:
    _, _, view = _read(request, ns)
    if view is None:
        return HTMLResponse("", headers=HEADERS)
    return render("panel.html", view=view, shown=SHOWN)


@router.get("/ui/login")
def login_form() -> HTMLResponse:
    return render("login.html")


def _same_origin(request: Request) -> bool:
    """A form posted from this server's own page (a browser sends ``Origin``)."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")


@router.post("/ui/login")
async def login(request: Request) -> Response:
    if not _same_origin(request):
        return render("login.html", 403, error="sign in from this server's own page")
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0].strip()
    if not token:
        return render("login.html", 401, error="enter a token")
    state = request.app.state
    try:
        await sessions.token_caller(state, token)
    except ApiError as exc:
        metrics = getattr(state, "metrics", None)
        if metrics is not None:
            metrics.token_refused(exc.status, exc.detail)
        why = str(exc.detail) if exc.status == 403 else "unknown, revoked or expired token"
        return render("login.html", exc.status, error=why)
    secure = request.url.scheme == "https"
    value = sessions.seal(state.registry_secret_box, token)
    return RedirectResponse(
        "/ui", 303, headers={"Set-Cookie": sessions.set_cookie(value, secure=secure)}
    )


@router.post("/ui/logout")
def logout(request: Request) -> RedirectResponse:
    secure = request.url.scheme == "https"
    return RedirectResponse(
        "/ui/login", 303, headers={"Set-Cookie": sessions.set_cookie("", secure=secure, max_age=0)}
    )


@router.get("/ui/assets/{asset}")
def asset(asset: str) -> FileResponse:
    if asset not in ASSETS:
        raise ApiError(404, "not_found", f"no dashboard asset named {asset!r}")
    return FileResponse(
        HERE / "assets" / asset,
        media_type=ASSETS[asset],
        headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
    )
