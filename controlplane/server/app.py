"""The application factory."""

from __future__ import annotations

import importlib

from fastapi import FastAPI

from ..db import make_engine, make_sessionmaker, run_migrations
from .bootstrap import bootstrap
from .deps import TokenCache
from .errors import install_error_handlers
from .limits import BodySizeLimit
from .notify import Notifier
from .settings import Settings

# Optional routers mounted when their module exists; each exposes ``router``
# (a fastapi.APIRouter with full paths such as "/api/namespaces/{ns}/providers").
OPTIONAL_ROUTERS = (
    "dreamlake.controlplane.registry.routes",
    "dreamlake.controlplane.launch.routes",
)


def include_routers(app: FastAPI) -> list[str]:
    """Mount the core routers, then every optional router that is installed."""
    from .routes import admin, work, workers

    app.include_router(admin.router)
    app.include_router(workers.router)
    app.include_router(work.router)
    mounted: list[str] = []
    for modname in OPTIONAL_ROUTERS:
        try:
            module = importlib.import_module(modname)
        except ModuleNotFoundError as exc:
            if exc.name is not None and modname.startswith(exc.name):
                continue
            raise
        app.include_router(module.router)
        mounted.append(modname)
    return mounted


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app: migrate the database, bootstrap the admin token, mount routes."""
    settings = settings or Settings.from_env()
    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    engine = make_engine(settings.database_url())
    run_migrations(engine)
    make_session = make_sessionmaker(engine)
    admin_file = bootstrap(settings, make_session)

    from dreamlake import __version__

    app = FastAPI(title="lakeshore", version=__version__, docs_url="/docs", redoc_url=None)
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = make_session
    app.state.notifier = Notifier()
    app.state.token_cache = TokenCache()
    app.state.admin_token_file = admin_file
    install_error_handlers(app)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.state.mounted = include_routers(app)
    from ..queues.loop import install as run_queue_loop  # queues that grow their own workers

    run_queue_loop(app)
    return app
