"""The daemon's requests as OpenTelemetry client spans, when traces are configured
(``engine/settings/tracing.py``: ``OTEL_EXPORTER_OTLP_ENDPOINT`` set and the
OpenTelemetry SDK and OTLP exporter installed for the Python that runs the daemon).

Each request the daemon makes (register, heartbeat, the long-poll for work, a
result, deregister, asking for or renewing its certificate) is then one ``CLIENT``
span, named by method and route template (``POST
/api/namespaces/{ns}/workers/{worker_id}/heartbeat``: never an id), the root of its
own trace, and carries that span's W3C ``traceparent``: the server's span for the
request is its child. Service name ``nymph`` unless ``OTEL_SERVICE_NAME`` says
otherwise.

Unconfigured, :func:`install` reads two environment variables and imports nothing,
and a request pays one test (``client.REQUEST_SPAN is None``): the daemon stays
standard library only.
"""

from __future__ import annotations

import functools
import urllib.parse
from collections.abc import Callable
from typing import Any

from dreamlake.engine.settings import tracing

from .. import client
from ..connection import Answer

SERVICE = "nymph"
# the segment after each of these in a path is an id: the route template's name for it
_IDS = {
    "namespaces": "{ns}",
    "workers": "{worker_id}",
    "work": "{work_id}",
    "providers": "{name}",
    "daemon": "{sha256}",
}


@functools.lru_cache(maxsize=256)  # a daemon asks few paths, again and again
def route(path: str) -> str:
    """The route template of a request's path (``/api/namespaces/{ns}/workers``),
    its query left out."""
    parts = path.split("?", 1)[0].split("/")
    for i in range(1, len(parts)):
        name = _IDS.get(parts[i - 1])
        if name is not None and parts[i]:
            parts[i] = name
    return "/".join(parts)


@functools.lru_cache(maxsize=16)
def _server(url: str) -> dict[str, Any]:
    where = urllib.parse.urlsplit(url)
    out: dict[str, Any] = {"server.address": where.hostname or ""}
    if where.port is not None:
        out["server.port"] = where.port
    return out


class RequestSpans:
    """``client.REQUEST_SPAN`` when traces are on: a ``CLIENT`` span around each
    request, current while its headers (and so its ``traceparent``) are made."""

    def __init__(self, tracer: Any) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode

        self.tracer = tracer
        self.kind = SpanKind.CLIENT
        self.error = Status(StatusCode.ERROR)

    def __call__(self, method: str, url: str, path: str, send: Callable[[], Answer]) -> Answer:
        template = route(path)
        attributes: dict[str, Any] = {
            "http.request.method": method,
            "url.template": template,
            **_server(url),
        }
        with self.tracer.start_as_current_span(
            f"{method} {template}",
            kind=self.kind,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                answer = send()
            except Exception as exc:  # no answer: refused, reset, timed out, untrusted
                span.set_attribute("error.type", type(exc).__name__)
                span.set_status(self.error)
                raise
            span.set_attribute("http.response.status_code", answer.status)
            if answer.status >= 400:
                span.set_attribute("error.type", str(answer.status))
                span.set_status(self.error)
            return answer


def install() -> bool:
    """Trace this daemon's requests when traces are configured (see the module's
    docstring); whether it does. Imports nothing of OpenTelemetry otherwise."""
    if not tracing.configured():
        return False
    tracer = tracing.tracer(SERVICE)
    if tracer is None:  # configured without the SDK: said once on stderr
        return False
    client.REQUEST_SPAN = RequestSpans(tracer)
    if tracing.inject not in client.HEADER_HOOKS:
        client.HEADER_HOOKS.append(tracing.inject)
    return True


def flush() -> None:
    """Export the spans still buffered (the daemon stops)."""
    tracing.flush()
