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


CERTIFICATE_REASONS = ("untrusted", "expired", "revoked", "mismatch", "other")
"""``lakeshore_certificate_refusals_total{reason}``: a client certificate the built-in
CA did not sign (or that does not verify); one past its validity; one revoked; one
that does not name the namespace, provider or instance it asks for; anything else.
The server counts the refusals made after the TLS handshake (the access gate's);
one the handshake itself refuses (another CA, past its dates) never reaches its
code, so ``untrusted`` stays 0 there (docs/metrics.md says why)."""

SHED_REASONS = ("connections", "in_flight", "queue_time", "draining")
"""``lakeshore_shed_total{reason}``: 503s for too many connections, too many requests
in flight, the oldest request waiting too long, and held long-polls answered while
the server shuts down."""

STALE_REASONS = ("closed", "waited")
"""``lakeshore_tls_stale_connections_total{reason}``: connections reset before any TLS
handshake because their client had given up: it had closed the connection while it
waited to be accepted, or its first bytes had waited longer than a daemon waits
(``controlplane/server/edge/stale.py``)."""

HANDSHAKE_OUTCOMES = ("done", "failed")
"""``lakeshore_tls_handshakes_total{outcome}``: TLS handshakes the edge processes
finished, and those that failed (plain HTTP, a certificate of another CA or past
its dates, a client that went away, no hello within 10 s)."""

LAUNCH_OUTCOMES = ("launched", "capacity", "refused", "failed")
"""``lakeshore_launches_total{launcher, outcome}``: instances asked of the launcher and
launched; refused for capacity or quota (the cloud's or the SSH pool's, or the
provider's own instance limit); refused otherwise (a 4xx: invalid, rejected); failed
(the launcher broke, a 5xx)."""

POOL_WAIT_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0)


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


def _every_label(counter: Counter, values: tuple[str, ...]) -> Counter:
    """``counter`` (one label) with each of ``values`` exported from the start, at 0."""
    for value in values:
        counter.labels(value)
    return counter


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
        self.token_refusals = _every_label(
            Counter(
                f"{PREFIX}_token_refusals",
                "Requests refused for their bearer token, by reason",
                ("reason",),
                registry=r,
            ),
            REFUSAL_REASONS,
        )
        self.loop_lag = Histogram(
            f"{PREFIX}_event_loop_lag_seconds",
            "How late the event loop ran a timer it was asked to run",
            buckets=LAG_BUCKETS,
            registry=r,
        )

        self.certificate_refusals = _every_label(
            Counter(
                f"{PREFIX}_certificate_refusals",
                "Client certificates refused, by reason",
                ("reason",),
                registry=r,
            ),
            CERTIFICATE_REASONS,
        )
        self.shed_total = _every_label(
            Counter(
                f"{PREFIX}_shed",
                "Requests answered 503 with Retry-After to shed load, by reason",
                ("reason",),
                registry=r,
            ),
            SHED_REASONS,
        )
        self.tls_stale = _every_label(
            Counter(
                f"{PREFIX}_tls_stale_connections",
                "Connections reset before a TLS handshake because their client had given up, by reason",
                ("reason",),
                registry=r,
            ),
            STALE_REASONS,
        )
        self.tls_handshakes = _every_label(
            Counter(
                f"{PREFIX}_tls_handshakes",
                "TLS handshakes done by the edge processes, by outcome",
                ("outcome",),
                registry=r,
            ),
            HANDSHAKE_OUTCOMES,
        )
        self.tls_edge_restarts = Counter(
            f"{PREFIX}_tls_edge_restarts",
            "TLS edge processes started again after one ended while the server ran",
            registry=r,
        )
        self.launches = Counter(
            f"{PREFIX}_launches",
            "Launches asked of this server, by launcher and outcome",
            ("launcher", "outcome"),
            registry=r,
        )
        self.pool_wait = Histogram(
            f"{PREFIX}_database_pool_wait_seconds",
            "Time a request waited for a connection from the database pool",
            buckets=POOL_WAIT_BUCKETS,
            registry=r,
        )

    def token_refused(self, status: int, detail: object) -> None:
        self.token_refusals.labels(refusal_reason(status, str(detail or ""))).inc()

    def shed(self, reason: str) -> None:
        self.shed_total.labels(reason if reason in SHED_REASONS else "in_flight").inc()


def _metrics(state: Any) -> ServerMetrics | None:
    """The app's metrics from its ``app.state`` (or the app itself), if installed."""
    state = getattr(state, "state", state)
    found = getattr(state, "metrics", None)
    return found if isinstance(found, ServerMetrics) else None


def certificate_refused(state: Any, reason: str) -> None:
    """Count a client certificate refused: call it wherever one is refused, with the
    app's ``state`` (or the app) and one of :data:`CERTIFICATE_REASONS` (any other
    value counts as ``other``). Never raises; a no-op without metrics."""
    metrics = _metrics(state)
    if metrics is not None:
        label = reason if reason in CERTIFICATE_REASONS else "other"
        metrics.certificate_refusals.labels(label).inc()


def shed_answered(state: Any, reason: str) -> None:
    """Count a 503 sent to shed load (one of :data:`SHED_REASONS`)."""
    metrics = _metrics(state)
    if metrics is not None:
        metrics.shed(reason)


def tls_edge_counts(state: Any, added: dict[str, int]) -> None:
    """Add an edge's counts since its last report (``closed``, ``waited``,
    ``handshakes``, ``failed``); a no-op without metrics."""
    metrics = _metrics(state)
    if metrics is None:
        return
    for name, value in added.items():
        if value <= 0:
            continue
        if name in STALE_REASONS:
            metrics.tls_stale.labels(name).inc(value)
        elif name == "handshakes":
            metrics.tls_handshakes.labels("done").inc(value)
        elif name == "failed":
            metrics.tls_handshakes.labels("failed").inc(value)


def tls_edge_restarted(state: Any) -> None:
    """Count an edge process started again; a no-op without metrics."""
    metrics = _metrics(state)
    if metrics is not None:
        metrics.tls_edge_restarts.inc()


def launch_outcome(exc: BaseException | None) -> str:
    """The outcome a launch ended with (:data:`LAUNCH_OUTCOMES`): None is launched."""
    if exc is None:
        return "launched"
    code = str(getattr(exc, "code", "") or "")
    text = f"{code} {getattr(exc, 'detail', '') or ''} {exc}"
    try:
        from ...capacity.refusal import capacity_refusal
    except ModuleNotFoundError:  # pragma: no cover - the capacity module is optional
        capacity_refusal = None  # type: ignore[assignment]
    if code == "limit_reached" or (capacity_refusal is not None and capacity_refusal(text)):
        return "capacity"
    status = getattr(exc, "status", None)
    return "refused" if isinstance(status, int) and 400 <= status < 500 else "failed"


class LaunchTally:
    """Counts one launch into ``lakeshore_launches_total``: the launch service sets
    :attr:`launcher` once it knows it, then :meth:`ended` is called with the
    exception the launch raised (None: launched). A launch that never named its
    launcher (an unknown provider) and a retry answered from its first result are
    not counted."""

    def __init__(self, state: Any) -> None:
        self.metrics = _metrics(state)
        self.launcher: str | None = None
        self.replayed = False

    def ended(self, exc: BaseException | None) -> None:
        if self.metrics is None or self.launcher is None or self.replayed:
            return
        self.metrics.launches.labels(self.launcher, launch_outcome(exc)).inc()


def install(app: Any) -> ServerMetrics:
    """The app's metrics (``app.state.metrics``), its fleet collector registered, its
    database pool's checkouts timed and its event-loop lag probe started with the
    server."""
    from prometheus_client import disable_created_metrics

    from ..runtime import add_service
    from .collector import FleetCollector
    from .looplag import LoopLag

    disable_created_metrics()  # no *_created series: Prometheus does not need them
    metrics = ServerMetrics()
    metrics.registry.register(FleetCollector(app))
    app.state.metrics = metrics
    engine = getattr(app.state, "engine", None)
    if engine is not None:
        from .poolwait import time_checkouts

        time_checkouts(engine, metrics.pool_wait)
    lag = LoopLag(metrics.loop_lag)
    add_service(app, lag.start, lag.stop)
    return metrics
