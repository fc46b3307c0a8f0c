"""The process's metrics: one :class:`prometheus_client.CollectorRegistry` per app."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from .names import PREFIX

LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

REFUSAL_REASONS = ("missing", "unknown", "expired", "forbidden", "namespace", "other")
"""``lakeshore_token_refusals_total{reason}``: no bearer token; an unknown or revoked
one; an expired one; a token whose scope may not do this; a namespace it may not
use (unknown, or another org's); anything else."""


def refusal_reason(status: int, detail: str) -> str:
    """The bounded reason a request's token was refused (see :data:`REFUSAL_REASONS`)."""
    if status == 401:
        if detail.startswith("missing"):
            return "missing"
        return "expired" if "expired" in detail else "unknown"
    if status == 403:
        return "forbidden"
    if status == 404:
        return "namespace"
    return "other"


class ServerMetrics:
    """The metrics one server process exports at ``/metrics``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.request_seconds = Histogram(
            f"{PREFIX}_http_request_duration_seconds",
            "Time to answer a request, by method, route template and status class "
            "(heartbeats and idle long-polls answered by the hot path are not in it)",
            ("method", "route", "status"),
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge(
            f"{PREFIX}_http_requests_in_flight",
            "Requests being answered now (outside the hot path)",
            registry=r,
        )
        self.token_refusals = Counter(
            f"{PREFIX}_token_refusals",
            "Requests refused for their bearer token, by reason",
            ("reason",),
            registry=r,
        )
        for reason in REFUSAL_REASONS:
            self.token_refusals.labels(reason)  # every reason exported from the start
        self.loop_lag = Histogram(
            f"{PREFIX}_event_loop_lag_seconds",
            "How late the event loop ran a timer it was asked to run",
            buckets=LAG_BUCKETS,
            registry=r,
        )

    def token_refused(self, status: int, detail: object) -> None:
        self.token_refusals.labels(refusal_reason(status, str(detail or ""))).inc()


def install(app: Any) -> ServerMetrics:
    """The app's metrics (``app.state.metrics``), its fleet collector registered and
    its event-loop lag probe started with the server."""
    from prometheus_client import disable_created_metrics

    from ..runtime import add_service
    from .collector import FleetCollector
    from .looplag import LoopLag

    disable_created_metrics()  # no *_created series: Prometheus does not need them
    metrics = ServerMetrics()
    metrics.registry.register(FleetCollector(app))
    app.state.metrics = metrics
    lag = LoopLag(metrics.loop_lag)
    add_service(app, lag.start, lag.stop)
    return metrics
