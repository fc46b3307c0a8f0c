"""``GET /metrics``: the server's metrics in Prometheus' text format, through
``prometheus-client``.

One registry per server process (:class:`~.registry.ServerMetrics`, held in
``app.state.metrics``): ``lakeshore serve`` runs one process per replica, so every
replica exports its own counts and Prometheus sums them across replicas; nothing is
shared between processes, so nothing needs prometheus-client's multi-process mode.

What each request costs is counted by :class:`~.middleware.RequestMetrics`, mounted
inside the fleet's hot path: a heartbeat or an idle long-poll answered there pays
one integer increment (``Heartbeats.beats``) and nothing else. What the database
knows (workers, queues, leases, launches) is read when Prometheus scrapes, by
:class:`~.collector.FleetCollector`, a few grouped counts. Labels are bounded:
namespace, provider, queue and launcher names, route templates, methods, status
classes and fixed reasons; never a worker, instance or token id, never a raw path.
The names are listed in docs/metrics.md.
"""

from .registry import ServerMetrics, install

__all__ = ["ServerMetrics", "install"]
