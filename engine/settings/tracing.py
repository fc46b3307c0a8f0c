"""OpenTelemetry traces, off unless configured: with the ``otel`` extra installed and
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) set, the
``dreamlake`` and ``lakeshore`` commands, ``lakeshore serve``'s requests and the
daemon's (``nymph``) emit spans, exported over OTLP/HTTP, and each request to the
control plane carries the W3C ``traceparent`` of the span it is made in, so a command
and the requests it causes are one trace. The standard ``OTEL_*`` variables configure the rest
(``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``,
``OTEL_SDK_DISABLED``, ``OTEL_EXPORTER_OTLP_HEADERS``...).

Unconfigured, this module reads two environment variables and imports nothing: the
``status`` path stays as light as it is. Configured without the extra, it says so
once on stderr and traces nothing. A program that set its own tracer provider
(a test's in-memory exporter) keeps it.
"""

from __future__ import annotations

import contextlib
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from collections.abc import Iterator, MutableMapping
    from typing import Any

ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
TRACER = "dreamlake"

_state: dict[str, Any] = {}


def configured() -> bool:
    """Whether traces are asked for (an OTLP endpoint set, the SDK not disabled)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(os.environ.get(name) for name in ENDPOINTS)


def tracer(service: str = "dreamlake") -> Any:
    """The tracer, the SDK set up on first use; None when traces are off."""
    if not configured():
        return None
    if "tracer" not in _state:
        _state["tracer"] = _setup(service)
    return _state["tracer"]


def _setup(service: str) -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        print(
            f"{service}: OTEL_EXPORTER_OTLP_ENDPOINT is set but the otel extra is not "
            "installed (pip install 'dreamlake[otel]'): no traces",
            file=sys.stderr,
        )
        return None
    current = trace.get_tracer_provider()
    if type(current).__name__ in ("ProxyTracerProvider", "NoOpTracerProvider"):
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            print(
                f"{service}: the otel extra is incomplete (opentelemetry-sdk and "
                "opentelemetry-exporter-otlp-proto-http): no traces",
                file=sys.stderr,
            )
            return None
        name = os.environ.get("OTEL_SERVICE_NAME") or service
        provider = TracerProvider(resource=Resource.create({"service.name": name}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
        _state["provider"] = provider
    return trace.get_tracer(TRACER)


@contextlib.contextmanager
def span(name: str, *, service: str = "dreamlake", **attributes: Any) -> Iterator[Any]:
    """A span around the block (the current span's child); nothing when traces are off."""
    t = tracer(service)
    if t is None:
        yield None
        return
    from opentelemetry.trace import Status, StatusCode

    with t.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except SystemExit as exc:  # a command's exit: an error only when it says so
            if exc.code not in (None, 0):
                current.set_status(Status(StatusCode.ERROR, f"exit status {exc.code}"))
            raise
        except BaseException as exc:
            current.record_exception(exc)
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def active() -> bool:
    """Whether this process traces (set up, with the SDK there)."""
    return _state.get("tracer") is not None


def inject(headers: MutableMapping[str, str]) -> None:
    """Add the current span's ``traceparent`` (and ``tracestate``) to ``headers``."""
    if not active():
        return
    from opentelemetry.propagate import inject as put

    put(headers)


def flush(timeout_ms: int = 5000) -> None:
    """Export what is buffered (a command ends: the batch would be lost with it)."""
    provider = _state.get("provider")
    if provider is not None:
        provider.force_flush(timeout_ms)


def command_name(program: str, args: list[str]) -> str:
    """A command's span name: the program and its command words, no values
    (``dreamlake provider connect``)."""
    words = []
    for arg in args[:2]:
        if arg.startswith("-"):
            break
        words.append(arg)
    return " ".join([program, *words])
