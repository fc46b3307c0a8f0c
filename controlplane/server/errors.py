"""Every error leaves the API as an RFC 9457 problem (``application/problem+json``)
with a proper status code: ``type``, ``title``, ``status``, ``detail`` (a sentence),
``instance`` (the request id), for a request that does not validate ``errors`` (the
list of what is wrong), and the members the ``dreamlake`` and ``lakeshore`` JSON
errors share: ``kind`` (a stable word) — also as ``error``, which clients read.
Routes raise :class:`ApiError`."""

from __future__ import annotations

import logging
import random
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..registry.crypto import StaleKeyError
from .problem import PROBLEM_JSON, problem

RETRY_LOCKED = (1, 4)  # seconds: a write SQLite refused goes through a moment later
log = logging.getLogger("lakeshore.errors")


def database_locked(exc: BaseException) -> bool:
    """SQLite's "database is locked" (PostgreSQL never says it)."""
    return isinstance(exc, OperationalError) and "database is locked" in str(exc)


_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "too_many_requests",
    500: "internal_error",
    503: "unavailable",
}


class ApiError(Exception):
    def __init__(self, status: int, error: str, detail: Any = None) -> None:
        super().__init__(f"{status} {error}: {detail}")
        self.status = status
        self.error = error
        self.detail = detail


def not_found(what: str, name: str) -> ApiError:
    return ApiError(404, "not_found", f"no {what} named {name!r}")


def error_response(
    status: int, error: str, detail: Any = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        problem(status, error, detail), status_code=status, headers=headers, media_type=PROBLEM_JSON
    )


def _validation_detail(exc: RequestValidationError) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        out.append({"loc": loc, "msg": err.get("msg", ""), "type": err.get("type", "")})
    return out


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return error_response(exc.status, exc.error, exc.detail, headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "validation_error", _validation_detail(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _CODES.get(exc.status_code, "error")
        return error_response(exc.status_code, code, exc.detail, getattr(exc, "headers", None))

    @app.exception_handler(OperationalError)
    async def _database(request: Request, exc: OperationalError) -> JSONResponse:
        if not database_locked(exc):
            raise exc  # the catch-all below answers it (500) and logs it
        # SQLite refused a write at once, well inside its busy timeout (as it does a
        # connection reading from an older snapshot than the newest commit; the pool
        # closes statements left open, see db.make_engine): the request's transaction
        # is rolled back whole, and the same request a moment later goes through.
        # A 503 the client retries.
        seconds = random.randint(*RETRY_LOCKED)
        log.warning("database is locked: %s %s answered 503", request.method, request.url.path)
        return error_response(
            503,
            "overloaded",
            f"the database is busy; retry after {seconds}s",
            {"Retry-After": str(seconds)},
        )

    @app.exception_handler(StaleKeyError)
    async def _stale_key(request: Request, exc: StaleKeyError) -> JSONResponse:
        # the key was rotated while this server ran (paused, say): nothing was written;
        # reload the key and have the client retry
        from anyio import to_thread

        from .runtime import reload_secret_box

        box = await to_thread.run_sync(reload_secret_box, request.app)
        if box is not None and box.key_id == exc.current:
            detail = f"{exc}; nothing was written, and the server has loaded the new key: retry"
        else:
            detail = (
                f"{exc}; nothing was written. Restart this server with the new key "
                "(LAKESHORE_SECRET_KEY or LAKESHORE_SECRET_KEY_FILE)"
            )
        return error_response(503, "key_rotated", detail, {"Retry-After": "1"})

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        # Only the type goes on the wire: a database error's text carries the SQL
        # statement and its parameters (request values). The server log has it all.
        return error_response(
            500, "internal_error", f"{type(exc).__name__} (the server log has the details)"
        )
