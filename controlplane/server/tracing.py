"""A span for every request ``lakeshore serve`` answers, when traces are configured
(``engine/settings/tracing.py``: the ``otel`` extra and ``OTEL_EXPORTER_OTLP_ENDPOINT``):
named by method and route template, a child of the caller's span when the request
carries a W3C ``traceparent`` (the ``dreamlake`` commands send theirs), with the
answer's status. Mounted outermost by the app factory only when configured."""

from __future__ import annotations

from typing import Any

from dreamlake.engine.settings import tracing

from .access import scopes


class TraceRequests:
    """Pure ASGI middleware; see the module's docstring."""

    def __init__(self, app: Any, state: Any) -> None:
        self.app = app
        self.state = state

    def _route(self, scope: dict[str, Any]) -> str:
        rules = getattr(self.state, "route_rules", None)
        found = scopes.match(scope["method"], scope["path"], rules).template
        return found if found is not None else "unmatched"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        tracer = tracing.tracer("lakeshore") if scope["type"] == "http" else None
        if tracer is None:
            await self.app(scope, receive, send)
            return
        from opentelemetry.propagate import extract
        from opentelemetry.trace import SpanKind, Status, StatusCode

        carrier = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in scope.get("headers", [])
            if k in (b"traceparent", b"tracestate")
        }
        route = self._route(scope)
        attributes = {"http.request.method": scope["method"], "http.route": route}
        with tracer.start_as_current_span(
            f"{scope['method']} {route}",
            context=extract(carrier),
            kind=SpanKind.SERVER,
            attributes=attributes,
        ) as span:

            async def send_status(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_status(Status(StatusCode.ERROR))
                await send(message)

            await self.app(scope, receive, send_status)
