"""``/docs``: the API's Swagger UI, every asset served by this server.

The page's script and stylesheet come from the ``swagger-ui-bundle`` package (in the
``server`` extra), under ``/docs/assets/``; nothing is fetched from anywhere else
(no CDN, no favicon from a website, no online validator), so an air-gapped control
plane shows the page. Without the package there is no ``/docs`` (``/openapi.json``
is always served).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}
"""What the page loads, and nothing else of the package is served."""

PREFIX = "/docs/assets/"


def assets_folder() -> Path | None:
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    return Path(str(swagger_ui_bundle.swagger_ui_path))


def install_docs(app: Any) -> bool:
    """Add ``/docs`` and its assets to ``app`` (built with ``docs_url=None``);
    False, and no page, when the assets are not installed."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import FileResponse, HTMLResponse

    from .errors import ApiError

    folder = assets_folder()
    if folder is None or not (folder / "swagger-ui-bundle.js").is_file():
        return False

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} — API",
            swagger_js_url=PREFIX + "swagger-ui-bundle.js",
            swagger_css_url=PREFIX + "swagger-ui.css",
            swagger_favicon_url=PREFIX + "favicon-32x32.png",
            swagger_ui_parameters={"validatorUrl": None},  # the default asks a website
        )

    @app.get(PREFIX + "{asset}", include_in_schema=False)
    def asset(asset: str) -> FileResponse:
        if asset not in ASSETS:
            raise ApiError(404, "not_found", f"no docs asset named {asset!r}")
        return FileResponse(
            folder / asset,
            media_type=ASSETS[asset],
            headers={"Cache-Control": "public, max-age=86400"},
        )

    return True
