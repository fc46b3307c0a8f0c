"""``mount`` serves a router's routes as its decorators built them, and what it
serves is what ``include_router`` serves: the same routes, paths and OpenAPI
document (``controlplane/server/app.py``)."""

from __future__ import annotations

from typing import Any

from dreamlake.controlplane.server import app as server_app
from dreamlake.controlplane.server.access import scopes
from fastapi import APIRouter, FastAPI


def _routers() -> list[Any]:
    import importlib

    from dreamlake.controlplane.server.identity import routes as daemon_certs
    from dreamlake.controlplane.server.metrics import route as metrics
    from dreamlake.controlplane.server.routes import admin, tokens, work, workers
    from dreamlake.controlplane.server.ui import routes as dashboard

    core = [admin, tokens, workers, work, metrics, dashboard, daemon_certs]
    optional = [importlib.import_module(m) for m in server_app.OPTIONAL_ROUTERS]
    return [m.router for m in core + optional]


def test_mounted_routes_are_the_decorated_ones_and_serve_as_included() -> None:
    mounted, included = FastAPI(), FastAPI()
    for router in _routers():
        server_app.mount(mounted, router)
        included.include_router(router)
    assert scopes.app_routes(mounted) == scopes.app_routes(included)
    assert mounted.openapi() == included.openapi()
    from dreamlake.controlplane.server.routes import admin

    assert all(any(r is m for m in mounted.router.routes) for r in admin.router.routes)


def test_a_router_included_with_a_prefix_stays_included() -> None:
    inner, outer, app = APIRouter(), APIRouter(), FastAPI()

    @inner.get("/x")
    def x() -> dict[str, str]:
        return {}

    outer.include_router(inner, prefix="/p")
    server_app.mount(app, outer)
    assert scopes.app_routes(app)[-1] == (frozenset({"GET"}), "/p/x")
    assert getattr(app.router.routes[-1], "original_router", None) is inner
