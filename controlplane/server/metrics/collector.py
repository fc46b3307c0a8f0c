"""What the database and this server's memory know, read when Prometheus scrapes:
a few grouped counts, each answered from an index or a small table, on the read
(autocommit) sessions. Nothing is kept between scrapes.

The fleet's counts are the database's, shared by every replica: each replica
exports the same values for them (aggregate them with ``max``, not ``sum``). The
database's ``last_seen`` trails a heartbeat by at most the writer's flush interval,
well under the live window, so a worker is never counted gone for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .names import PREFIX


class FleetCollector(Collector):
    def __init__(self, app: Any) -> None:
        self.app = app

    def describe(self) -> list[Metric]:
        return []  # collected at scrape time only (never at registration)

    def collect(self) -> Iterator[Metric]:
        yield from self._memory()
        started = time.perf_counter()
        families: list[Metric] = []
        ok = 1.0
        try:
            families = self._database()
        except Exception:  # a scrape still answers what memory knows
            ok = 0.0
        yield from families
        up = GaugeMetricFamily(
            f"{PREFIX}_metrics_database_up",
            "1 when this scrape read the fleet's counts from the database, else 0",
        )
        up.add_metric([], ok)
        yield up
        took = GaugeMetricFamily(
            f"{PREFIX}_metrics_database_seconds",
            "Time this scrape spent reading the fleet's counts from the database",
        )
        took.add_metric([], time.perf_counter() - started)
        yield took

    def _memory(self) -> Iterator[Metric]:
        hb = getattr(self.app.state, "heartbeats", None)
        beats = CounterMetricFamily(
            f"{PREFIX}_heartbeats_received",
            "Heartbeats this server recorded (a held long-poll's beats not included)",
        )
        beats.add_metric([], float(hb.beats if hb is not None else 0))
        yield beats
        held = GaugeMetricFamily(
            f"{PREFIX}_long_polls_held", "Daemons' long-polls held open by this server now"
        )
        held.add_metric([], float(hb.polls_held() if hb is not None else 0))
        yield held
        yield from _pool(getattr(self.app.state, "engine", None))

    def _database(self) -> list[Metric]:
        from ...db import utcnow

        state = self.app.state
        make = getattr(state, "read_sessionmaker", None) or state.sessionmaker
        now = utcnow()
        with make() as session:
            out = [
                _workers(session, now - timedelta(seconds=state.settings.live_seconds)),
                *_queued(session, now),
                _work_states(session),
            ]
            out += _capacity(session, now)
            out += _launches(session)
        return out


def _pool(engine: Any) -> Iterator[Metric]:
    """The database pool's connections in use and idle (a pool that counts them:
    SQLAlchemy's QueuePool, which the server's engine uses)."""
    pool = getattr(engine, "pool", None)
    checkedout = getattr(pool, "checkedout", None)
    checkedin = getattr(pool, "checkedin", None)
    if checkedout is None or checkedin is None:
        return
    family = GaugeMetricFamily(
        f"{PREFIX}_database_pool_connections",
        "This process's database connections, in use and idle",
        labels=("state",),
    )
    family.add_metric(["in_use"], float(checkedout()))
    family.add_metric(["idle"], float(checkedin()))
    yield family
    size = getattr(pool, "size", None)
    if size is not None:
        limit = GaugeMetricFamily(
            f"{PREFIX}_database_pool_size", "This process's database pool size"
        )
        limit.add_metric([], float(size()))
        yield limit


def _workers(session: Any, cutoff: Any) -> Metric:
    from sqlalchemy import and_, case, func, select

    from ...models import Namespace, Worker

    live = case((and_(Worker.deregistered_at.is_(None), Worker.last_seen >= cutoff), 1), else_=0)
    rows = session.execute(
        select(Namespace.name, Worker.provider_name, func.count(), func.sum(live))
        .join(Namespace, Namespace.id == Worker.namespace_id)
        .group_by(Namespace.name, Worker.provider_name)
    ).all()
    family = GaugeMetricFamily(
        f"{PREFIX}_workers",
        "Daemons' workers by namespace, provider and state (live: heartbeat within the "
        "live window; gone: silent or deregistered)",
        labels=("namespace", "provider", "state"),
    )
    for ns, provider, count, live_count in rows:
        family.add_metric([ns, provider, "live"], float(live_count or 0))
        family.add_metric([ns, provider, "gone"], float(count - (live_count or 0)))
    return family


def _queued(session: Any, now: Any) -> list[Metric]:
    from sqlalchemy import func, select

    from ...models import Namespace, WorkItem

    queue = func.coalesce(WorkItem.queue, "")
    rows = session.execute(
        select(
            Namespace.name,
            WorkItem.provider_name,
            queue,
            func.count(),
            func.min(WorkItem.created_at),
        )
        .join(Namespace, Namespace.id == WorkItem.namespace_id)
        .where(WorkItem.state == "queued")
        .group_by(Namespace.name, WorkItem.provider_name, queue)
    ).all()
    labels = ("namespace", "provider", "queue")
    depth = GaugeMetricFamily(
        f"{PREFIX}_queue_depth",
        "Work items queued and not yet claimed, by namespace, provider and queue "
        '(queue "": sent to the provider directly)',
        labels=labels,
    )
    oldest = GaugeMetricFamily(
        f"{PREFIX}_queue_oldest_age_seconds",
        "Age of the oldest work item still queued, by namespace, provider and queue",
        labels=labels,
    )
    for ns, provider, name, count, first in rows:
        depth.add_metric([ns, provider, name or ""], float(count))
        age = (now - first).total_seconds() if first is not None else 0.0
        oldest.add_metric([ns, provider, name or ""], max(0.0, age))
    return [depth, oldest]


def _work_states(session: Any) -> Metric:
    from sqlalchemy import func, select

    from ...models import Namespace, WorkItem

    rows = session.execute(
        select(Namespace.name, WorkItem.state, func.count())
        .join(Namespace, Namespace.id == WorkItem.namespace_id)
        .group_by(Namespace.name, WorkItem.state)
    ).all()
    family = GaugeMetricFamily(
        f"{PREFIX}_work_items",
        "Work items the database holds, by namespace and state",
        labels=("namespace", "state"),
    )
    for ns, item_state, count in rows:
        family.add_metric([ns, item_state], float(count))
    return family


def _capacity(session: Any, now: Any) -> list[Metric]:
    from sqlalchemy import func, select

    from ...models import Namespace

    try:
        from ...capacity.models import CapacityBackoff, CapacityLease
    except ModuleNotFoundError:
        return []
    leases = GaugeMetricFamily(
        f"{PREFIX}_capacity_leases",
        "Capacity leases by namespace and state (pending, granted, launching, "
        "released, expired, ...)",
        labels=("namespace", "state"),
    )
    for ns, lease_state, count in session.execute(
        select(Namespace.name, CapacityLease.state, func.count())
        .join(Namespace, Namespace.id == CapacityLease.namespace_id)
        .group_by(Namespace.name, CapacityLease.state)
    ).all():
        leases.add_metric([ns, lease_state], float(count))
    backoffs = GaugeMetricFamily(
        f"{PREFIX}_capacity_backoffs",
        "Providers not placed on now after refusing a launch for capacity or quota",
        labels=("namespace", "provider"),
    )
    for ns, provider, count in session.execute(
        select(Namespace.name, CapacityBackoff.provider_name, func.count())
        .join(Namespace, Namespace.id == CapacityBackoff.namespace_id)
        .where(CapacityBackoff.until > now)
        .group_by(Namespace.name, CapacityBackoff.provider_name)
    ).all():
        backoffs.add_metric([ns, provider], float(count))
    return [leases, backoffs]


def _launches(session: Any) -> list[Metric]:
    from sqlalchemy import func, select

    from ...models import Namespace

    try:
        from ...launch.models import LaunchRequest
    except ModuleNotFoundError:
        return []
    family = GaugeMetricFamily(
        f"{PREFIX}_launch_requests",
        "Launch requests the database holds, by namespace, launcher and outcome "
        "(pending, done, failed)",
        labels=("namespace", "launcher", "state"),
    )
    for ns, launcher, req_state, count in session.execute(
        select(Namespace.name, LaunchRequest.launcher, LaunchRequest.state, func.count())
        .join(Namespace, Namespace.id == LaunchRequest.namespace_id)
        .group_by(Namespace.name, LaunchRequest.launcher, LaunchRequest.state)
    ).all():
        family.add_metric([ns, launcher, req_state], float(count))
    return [family]
