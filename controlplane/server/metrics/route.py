"""``GET /metrics``: an admin token or a ``metrics`` token (the access gate checks
it, ``access/scopes.py``)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

router = APIRouter()


def render(app: object) -> tuple[bytes, str]:
    """The app's metrics as Prometheus' text format, and its content type."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    metrics = app.state.metrics  # type: ignore[attr-defined]
    return generate_latest(metrics.registry), CONTENT_TYPE_LATEST


@router.get("/metrics", response_class=Response, tags=["health"])
def metrics(request: Request) -> Response:
    """The server's metrics in Prometheus' text format (this process's own: every
    replica exports its own)."""
    body, kind = render(request.app)
    return Response(body, media_type=kind)
