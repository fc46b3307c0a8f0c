"""The application factory."""

from __future__ import annotations

import importlib
from typing import Any

from fastapi import APIRouter, FastAPI

from ..db import make_engine, make_sessionmaker, run_migrations
from .access import scopes
from .access.gate import Gate
from .bootstrap import bootstrap
from .deps import TokenCache
from .docs_ui import install_docs
from .errors import install_error_handlers
from .files import secure_data_dir, secure_db_files
from .fleet import presence
from .fleet.hotpath import HotPath
from .fleet.notify import Notifier
from .fleet.shedding import Shed
from .fleet.wakeup import Wakeup
from .json_guard import JsonGuard
from .limits import BodySizeLimit
from .metrics import install as install_metrics
from .metrics.middleware import RequestMetrics
from .requestlog import RequestLog
from .runtime import add_service, lifespan, load_secret_box, unscoped_listings
from .settings import Settings

# Optional routers mounted when their module exists; each exposes ``router``
# (a fastapi.APIRouter with full paths such as "/api/namespaces/{ns}/providers").
OPTIONAL_ROUTERS = (
    "dreamlake.controlplane.registry.routes",
    "dreamlake.controlplane.launch.routes",
    "dreamlake.controlplane.capacity.routes",
)


def _as_it_is(included: Any) -> bool:
    """Whether an included router was included with nothing of its own (no prefix,
    tags, dependencies, responses, ...): its routes serve as they were built."""
    ctx = included.include_context
    return not (
        ctx.prefix
        or ctx.tags
        or ctx.dependencies
        or ctx.responses
        or ctx.callbacks
        or ctx.deprecated is not None
        or not ctx.include_in_schema
        or ctx.max_body_size is not None
        or ctx.dependency_overrides_provider is not None
    )


def mount(app: FastAPI, router: APIRouter) -> None:
    """``router``'s routes on the app's own router, as its decorators built them
    (what ``app.include_router(router)`` serves, but that builds every route of a
    router once more, dependencies and models, on the first request the router
    sees); a router it includes with something of its own stays included."""
    for route in router.routes:
        inner = getattr(route, "original_router", None)
        if inner is not None and _as_it_is(route):
            mount(app, inner)
        else:
            app.router.routes.append(route)


def include_routers(app: FastAPI) -> list[str]:
    """Mount the core routers, then every optional router that is installed."""
    from .metrics import route as metrics
    from .routes import admin, tokens, work, workers
    from .ui import routes as dashboard

    for core in (admin, tokens, workers, work, metrics, dashboard):
        mount(app, core.router)
    from .identity import routes as daemon_certs  # a daemon's certificate

    mount(app, daemon_certs.router)
    mounted: list[str] = []
    for modname in OPTIONAL_ROUTERS:
        try:
            module = importlib.import_module(modname)
        except ModuleNotFoundError as exc:
            if exc.name is not None and modname.startswith(exc.name):
                continue
            raise
        mount(app, module.router)
        mounted.append(modname)
    return mounted


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app: migrate the database, bootstrap the admin token, mount routes."""
    settings = settings or Settings.from_env()
    secure_data_dir(settings.data_dir)
    secure_db_files(settings.database_url(), create=True)
    engine = make_engine(settings.database_url(), settings.pool_size)
    run_migrations(engine)
    secure_db_files(settings.database_url())
    make_session = make_sessionmaker(engine)
    # this server holds the database from now on (keys rotate refuses meanwhile),
    # announced before its key is checked: see presence.py
    here = presence.announce(make_session, str(settings.data_dir))
    try:
        # the key first: a replica refused for a wrong key writes nothing (no admin
        # token, no bootstrap row, no presence)
        box = load_secret_box(settings, make_session)
        admin_token = bootstrap(settings, make_session)
    except BaseException:
        presence.withdraw(make_session, here)
        raise

    from dreamlake import __version__

    app = FastAPI(
        title="lakeshore",
        version=__version__,
        docs_url=None,  # /docs serves its assets itself (docs_ui.py)
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = make_session
    # reads that must not pay for a transaction (BEGIN and ROLLBACK are two round
    # trips on PostgreSQL): every `provider status` reads claims through this one
    app.state.read_sessionmaker = make_sessionmaker(
        engine.execution_options(isolation_level="AUTOCOMMIT")
    )
    app.state.notifier = Notifier()
    # set when the server starts shutting down: held polls answer 503 + Retry-After
    app.state.draining = Wakeup()
    app.state.token_cache = TokenCache()
    app.state.admin_token_file = admin_token.path
    app.state.admin_token_elsewhere = admin_token.elsewhere  # None: the file holds it
    app.state.registry_secret_box = box
    app.state.unscoped_listings = unscoped_listings(settings, make_session)
    install_error_handlers(app)
    install_metrics(app)  # GET /metrics: this process's registry (metrics/)
    app.add_middleware(JsonGuard, max_depth=settings.max_json_depth)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(Gate, state=app.state)  # who asks, before any body is read
    # every request's time, inside the hot path: its heartbeats only count (metrics/)
    app.add_middleware(RequestMetrics, state=app.state)
    app.add_middleware(HotPath, state=app.state)  # heartbeats and idle polls
    app.add_middleware(  # a 503 with Retry-After when over capacity
        Shed,
        state=app.state,
        max_connections=settings.max_connections or 0,
        max_pending=settings.max_pending,
        retry_after=settings.retry_after_seconds,
        max_queue_seconds=settings.max_queue_seconds,
        busy_at=settings.pool_size,  # fewer in flight: a thread is free, nothing queues
    )
    app.add_middleware(RequestLog)  # outermost: every answer gets the request's id
    from dreamlake.engine.settings import tracing

    if tracing.configured():  # OpenTelemetry: a span per request (server/tracing.py)
        from .tracing import TraceRequests

        app.add_middleware(TraceRequests, state=app.state)
    app.state.mounted = include_routers(app)
    install_docs(app)
    # the gate's table, from the routes the router serves: a route without an access
    # rule stops the server here (UndeclaredRoutes)
    app.state.route_rules = scopes.rules_for(scopes.app_routes(app))
    from ..queues.loop import install as run_queue_loop  # queues that grow their own workers

    run_queue_loop(app)
    held = presence.Presence(make_session, here)
    add_service(app, held.start, held.stop)
    return app
