"""The lakeshore server: FastAPI over SQLAlchemy 2, migrated by Alembic on start.

Pieces, and how to build on them:

* ``dreamlake.controlplane.db`` — ``Base`` (declare tables on it), ``make_engine``,
  ``make_sessionmaker``, ``run_migrations``, ``UTCDateTime``, ``utcnow``.
* Tables: core ones in ``controlplane/models.py`` (Namespace, Token, Worker,
  WorkItem). Registry tables go in ``controlplane/registry/models.py`` on the same
  ``Base``; the Alembic env imports that module when it exists.
* Migrations: core revisions in ``controlplane/migrations/versions/`` (first id
  ``0001_core``). Registry revisions go in ``controlplane/registry/migrations/``
  (give the folder an ``__init__.py`` so it installs; Alembic skips it), the first
  with ``revision = "0002_registry"`` and ``down_revision = "0001_core"``. Both
  folders are version locations; start-up upgrades to ``heads``.
* Routers: ``app.include_routers(app)`` mounts the core routers, then
  ``dreamlake.controlplane.registry.routes`` when it is importable — that module
  exposes ``router = APIRouter()`` with full paths
  (``/api/namespaces/{ns}/providers`` ...). Add other optional routers to
  ``app.OPTIONAL_ROUTERS``.
* Auth: ``deps.require_namespace`` (a route with a ``{ns}`` path parameter gets an
  ``Access`` with ``.namespace`` and ``.namespace_ids`` — the org siblings),
  ``deps.require_admin``, ``deps.get_session``. 401 for a missing/unknown token,
  403 for a token of another namespace, 404 for an unknown namespace (admin).
* Errors: raise ``errors.ApiError(status, code, detail)``; every error leaves as
  JSON ``{"error", "detail"}``. Validation failures are 422 with a list of
  ``{loc, msg, type}``; bodies over the limit are 413.
* Tests: ``create_app(Settings(data_dir=tmp, db_url=...))`` gives a FastAPI app
  (the admin token is in ``app.state.admin_token_file``).
"""

from __future__ import annotations

from .settings import Settings

__all__ = ["Settings", "create_app"]


def create_app(settings: Settings | None = None):  # type: ignore[no-untyped-def]
    from .app import create_app as _create_app

    return _create_app(settings)
