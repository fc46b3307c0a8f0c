"""The reconcile loop: queues grow and shrink their own workers.

Every tick, the server holding the ``queues`` lease (a row in ``leases``: taken when
free or expired, renewed by its holder; works the same on SQLite and PostgreSQL, so
any number of ``lakeshore serve`` replicas over one database run one loop between
them) looks at each queue:

* pending work and no free worker → launch through the queue's provider (and mode),
  resuming suspended workers first, never past ``max``. A launched worker that has
  not claimed yet counts as free, so a slow boot does not launch twice.
* a worker idle past ``idle_seconds`` while the queue has more than ``min`` → suspended
  (``idleAction=suspend`` and a launcher that can) or terminated (its token revoked).
* a worker's instance terminated → its worker leaves the count at once; and across
  every namespace (:meth:`QueueLoop.track`): a live worker whose instance row is
  terminated or missing is told to stop (an orphan), a daemon instance whose daemon
  has not registered within ``LAKESHORE_QUEUE_START_TIMEOUT`` seconds of its latest
  start (a launch or a resume) is failed with the reason.

A queue whose launch or terminate fails is retried with a growing pause (up to a
minute), and the failure is a decision too (``error``).

Each decision is a ``queue_events`` row (``lakeshore queues status``) and a log line.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..db import utcnow
from ..launch import dispatch, hybrid, tracking
from ..launch import service as launches
from ..launch.models import Instance, LaunchRequest, Lease, Queue, QueueEvent
from ..models import Namespace, Worker, WorkItem
from ..registry import service as registry
from ..registry.crypto import SecretBox, load_or_create_key
from ..server.deps import org_namespace_ids
from ..server.runtime import reload_if_rotated
from . import service as queues

log = logging.getLogger("lakeshore.queues")

LEASE = "queues"
TICK_ENV = "LAKESHORE_QUEUE_TICK"
DEFAULT_TICK = 2.0
REFRESH_SECONDS = 30.0
ORPHAN_RETELL = 30.0
"""An orphan still live this long after it was told to stop is told again."""
MAX_BACKOFF = 60.0


class QueueLoop:
    def __init__(self, app: Any, tick: float | None = None) -> None:
        self.app = app
        self.tick = tick or float(os.environ.get(TICK_ENV) or DEFAULT_TICK)
        self.lease_seconds = max(3 * self.tick, 5.0)
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._refreshed: dict[int, datetime] = {}
        self._told: dict[str, float] = {}  # orphan worker id -> when to tell it again
        self._backoff: dict[int, tuple[float, int]] = {}
        # hybrid queues working direct since their daemon failed: until when, and why
        self.direct: dict[int, tuple[float, str]] = {}
        self._busy = threading.Event()
        self._renewer: threading.Thread | None = None

    def refresh_due(self, queue_id: int, now: datetime) -> bool:
        """Whether a queue's launches are due to be asked about again (every
        :data:`REFRESH_SECONDS`); when they are, they count as asked from ``now``."""
        last = self._refreshed.get(queue_id)
        if last is not None and (now - last).total_seconds() < REFRESH_SECONDS:
            return False
        self._refreshed[queue_id] = now
        return True

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="lakeshore-queues", daemon=True)
            self._thread.start()
            # A launch can take minutes (an SSH install): the lease is renewed meanwhile,
            # or another server would take it over and launch for the same work.
            self._renewer = threading.Thread(
                target=self._renew, name="lakeshore-queues-lease", daemon=True
            )
            self._renewer.start()

    def _renew(self) -> None:
        while not self._stop.wait(self.tick):
            if self._busy.is_set():
                with contextlib.suppress(Exception):
                    self.acquire()

    def stop(self) -> None:
        self._stop.set()
        for thread in (self._thread, self._renewer):
            if thread is not None:
                thread.join(timeout=30)
        self._thread = self._renewer = None
        with contextlib.suppress(Exception), self.app.state.sessionmaker() as s:
            s.execute(
                update(Lease)
                .where(Lease.name == LEASE, Lease.holder == self.holder)
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
            s.commit()

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            try:
                self.once()
            except Exception:
                log.exception("queue reconcile failed")

    # -- the lease ---------------------------------------------------------------

    def acquire(self) -> bool:
        """Take or renew the lease; True when this server runs the loop now."""
        now = utcnow()
        until = now + timedelta(seconds=self.lease_seconds)
        with self.app.state.sessionmaker() as s:
            res = s.execute(
                update(Lease)
                .where(
                    Lease.name == LEASE, or_(Lease.holder == self.holder, Lease.expires_at < now)
                )
                .values(holder=self.holder, expires_at=until)
            )
            s.commit()
            if res.rowcount == 1:  # type: ignore[attr-defined]
                return True
            if s.get(Lease, LEASE) is not None:
                return False
            s.add(Lease(name=LEASE, holder=self.holder, expires_at=until))
            try:
                s.commit()
            except IntegrityError:
                s.rollback()
                return False
            return True

    # -- one pass ----------------------------------------------------------------

    def once(self) -> bool:
        if not self.acquire():
            return False
        with self.app.state.sessionmaker() as s:
            ids = [q.id for q in s.scalars(select(Queue))]
        self._busy.set()
        try:
            self._each(ids)
            self._capacity()
            with self.app.state.sessionmaker() as s:
                try:
                    self.track(s)
                except Exception:
                    s.rollback()
                    log.exception("launch tracking failed")
        finally:
            self._busy.clear()
        return True

    def _each(self, ids: list[int]) -> None:
        now = time.monotonic()
        for qid in ids:
            if self._stop.is_set():
                break
            until, failures = self._backoff.get(qid, (0.0, 0))
            if now < until:
                continue
            with self.app.state.sessionmaker() as s:
                row = s.get(Queue, qid)
                if row is not None:
                    try:
                        self.reconcile(s, row)
                        self._backoff.pop(qid, None)
                    except Exception as exc:
                        s.rollback()
                        reload_if_rotated(self.app, exc)
                        # a failing provider is asked again later, not every tick
                        delay = min(MAX_BACKOFF, self.tick * 2 ** min(failures, 8))
                        self._backoff[qid] = (time.monotonic() + delay, failures + 1)
                        detail = getattr(exc, "detail", None) or str(exc)
                        self.event(s, row, "error", str(detail), dedupe=True)

    def _capacity(self) -> None:
        """Leases past their expiry end; pending leases are tried again."""
        from ..capacity import loop as capacity

        try:
            capacity.tick(self.app, self.box(), budget=max(0.2, self.tick / 2))
        except Exception as exc:
            reload_if_rotated(self.app, exc)
            log.exception("capacity reconcile failed")

    def box(self) -> SecretBox:
        box = getattr(self.app.state, "registry_secret_box", None)
        if box is None:
            box = SecretBox(load_or_create_key(self.app.state.settings.data_dir))
            self.app.state.registry_secret_box = box
        return box

    def event(self, s: Session, q: Queue, action: str, detail: str, dedupe: bool = False) -> None:
        if dedupe:
            last = s.scalar(
                select(QueueEvent)
                .where(QueueEvent.namespace_id == q.namespace_id, QueueEvent.queue == q.name)
                .order_by(QueueEvent.id.desc())
                .limit(1)
            )
            if last is not None and last.action == action and last.detail == detail:
                return
        s.add(
            QueueEvent(
                namespace_id=q.namespace_id,
                queue=q.name,
                action=action,
                detail=detail,
                holder=self.holder,
            )
        )
        s.commit()
        log.info("queue %s: %s %s", q.name, action, detail)

    # -- launch tracking: instances against claims, every namespace ---------------

    def track(self, s: Session) -> None:
        """Compare instance rows with workers: a live worker whose instance is
        terminated or missing is told to stop (an ``orphan``, listed until gone); a
        daemon instance whose daemon has not registered within the start timeout of
        its latest start is failed with the reason."""
        now = utcnow()
        clock = time.monotonic()
        self._told = {k: t for k, t in self._told.items() if t > clock}
        # only namespaces that launched: instance tokens exist nowhere else
        ns_ids = set(s.scalars(select(Instance.namespace_id).distinct()))
        ns_ids |= set(s.scalars(select(LaunchRequest.namespace_id).distinct()))
        state = self.app.state
        for ns_id in sorted(ns_ids):
            ns = s.get(Namespace, ns_id)
            if ns is None:
                continue
            scope = registry.Scope(namespace=ns, org_ids=org_namespace_ids(s, ns))
            for orphan in tracking.orphans(s, state, ns_id):
                key = orphan.worker.id
                if time.monotonic() < self._told.get(key, 0.0):
                    continue
                self._told[key] = time.monotonic() + ORPHAN_RETELL
                try:
                    launches.stop_orphan(s, scope, self.box(), state, orphan)
                    outcome = "told to stop"
                except Exception as exc:
                    s.rollback()
                    outcome = f"could not be stopped: {getattr(exc, 'detail', exc)}"
                self._note(
                    s,
                    ns_id,
                    orphan.row.queue if orphan.row is not None else None,
                    "orphan",
                    f"worker {orphan.worker.instance_id} ({orphan.worker.id}) {outcome}: "
                    f"{orphan.reason}",
                )
            rows = launches.rows_for(s, ns_id)
            limit = tracking.start_timeout()
            for r in tracking.overdue(rows, tracking.registered(s, ns_id), now):
                reason = f"no daemon registered within {limit:.0f}s of its start"
                try:
                    launches.fail_instance(s, scope, self.box(), state, r, reason)
                except Exception as exc:
                    s.rollback()
                    log.warning("could not fail %s: %s", r.instance_id, exc)
                    continue
                self._note(s, ns_id, r.queue, "fail", f"{r.instance_id}: {reason}")

    def _note(self, s: Session, ns_id: int, queue: str | None, action: str, detail: str) -> None:
        """A tracking decision: a queue event when the instance is a queue's, and a log line."""
        if queue:
            s.add(
                QueueEvent(
                    namespace_id=ns_id,
                    queue=queue,
                    action=action,
                    detail=detail,
                    holder=self.holder,
                )
            )
            s.commit()
        log.info("instances: %s %s", action, detail)

    # -- one queue -----------------------------------------------------------------

    def reconcile(self, s: Session, q: Queue) -> None:
        """One queue: look (:meth:`observe`), then grow for pending work or shrink
        what sits idle."""
        if q.providers:  # several providers: placement with failover
            from ..capacity import queueplace

            return queueplace.reconcile(self, s, q)
        view = self.observe(s, q)
        if view is None:
            return
        if hybrid.is_hybrid(s, view.scope, q):  # first item direct, a daemon behind it
            hybrid.settle(self, s, q, view.scope)
            if view.need > 0:
                hybrid.grow(self, s, q, view)
                return
        if view.need > 0:
            self.grow(s, q, view)
        else:
            self.shrink(s, q, view)

    def observe(self, s: Session, q: Queue) -> QueueView | None:
        ns = s.get(Namespace, q.namespace_id)
        if ns is None:
            return None
        state = self.app.state
        scope = registry.Scope(namespace=ns, org_ids=org_namespace_ids(s, ns))
        provider = registry.get_provider_row(s, scope, q.provider_name)
        refusal = dispatch.queue_refusal(q.provider_name, dispatch.of_provider(provider))
        if refusal:
            raise launches.LaunchError(422, "validation_error", refusal)
        now = utcnow()
        rows = launches.rows_for(s, q.namespace_id, provider=q.provider_name, queue=q.name)
        if rows and self.refresh_due(q.id, now):
            launches.refresh(s, scope, self.box(), state, rows)
            rows = [r for r in rows if r.terminated_at is None]

        # a live worker counts only through a live instance of this queue: a terminated
        # instance's worker, or an orphan, is no free worker
        live = tracking.live_workers(s, state, q.namespace_id, q.provider_name)
        lost = {o.worker.id for o in tracking.orphans(s, state, q.namespace_id, live)}
        live = [w for w in live if w.id not in lost]
        workers: dict[int, Worker] = {}
        for r in rows:
            w = next((w for w in live if tracking.belongs(w, r)), None)
            if w is not None:
                workers[r.id] = w
        busy = set(
            s.scalars(
                select(WorkItem.worker_id).where(
                    WorkItem.namespace_id == q.namespace_id, WorkItem.state == "running"
                )
            )
        )
        suspended = [r for r in rows if r.state in ("suspended", "stopped", "stopping")]
        running = [r for r in rows if r not in suspended]
        # free: live workers serving this queue with nothing running (those of its own
        # instances, and any other daemon of the provider that serves it), plus
        # launched instances whose daemon has not claimed yet (a slow boot is not
        # launched twice)
        asleep = {workers[r.id].id for r in suspended if r.id in workers}
        free_workers = [
            w
            for w in live
            if w.id not in busy and w.id not in asleep and (not w.queues or q.name in w.queues)
        ]
        starting = [r for r in running if r.id not in workers]
        free = len(free_workers) + len(starting)
        return QueueView(
            scope=scope,
            now=now,
            rows=rows,
            running=running,
            suspended=suspended,
            workers=workers,
            busy=busy,
            free=free,
            need=queues.pending(s, q) - free,
        )

    def grow(self, s: Session, q: Queue, view: QueueView) -> None:
        """Pending work and no free worker: resume suspended workers first, then launch
        through the queue's provider, never past ``max``."""
        state, box = self.app.state, self.box()
        need = view.need
        for r in view.suspended[:need]:
            launches.stop_instance(s, view.scope, box, state, r, action="resume")
            self.event(s, q, "resume", f"{r.instance_id}: pending work and no free worker")
            need -= 1
        room = q.max_workers - len(view.rows)
        n = min(need, room)
        under = (
            launches.limit_room(s, view.scope, state, q.provider_name, dispatch.DAEMON)
            if n > 0
            else None
        )
        if n > 0 and under is not None and under < n:
            n = under  # the provider's instance limit: never past it
            if n <= 0:
                self.event(
                    s, q, "at-limit",
                    f"{need} worker(s) wanted; {q.provider_name} is at its instance limit",
                    dedupe=True,
                )  # fmt: skip
        if n > 0:
            body: dict[str, Any] = {
                "provider": q.provider_name,
                "count": n,
                "queue": q.name,
                "clientToken": f"q{q.id}-{uuid.uuid4().hex[:24]}",
            }
            if q.mode:
                body["mode"] = q.mode
            out = launches.launch(
                s,
                view.scope,
                box,
                body,
                state=state,
                server_url=q.server_url,
                data_dir=state.settings.data_dir,
            )
            ids = ", ".join(i["id"] for i in out.get("instances", []))
            self.event(
                s,
                q,
                "launch",
                f"{n} worker(s) for {need + view.free} pending item(s), {view.free} free: {ids}",
            )
        elif need > 0 and room <= 0:
            self.event(
                s,
                q,
                "at-max",
                f"{need} item(s) wait: the queue is at max {q.max_workers}",
                dedupe=True,
            )

    def shrink(self, s: Session, q: Queue, view: QueueView) -> None:
        """A worker idle past ``idle_seconds`` while the queue has more than ``min``:
        suspended (``idleAction=suspend`` and a launcher that can) or terminated."""
        state, box = self.app.state, self.box()
        active = len(view.running)
        for r in view.running:
            if active <= q.min_workers:
                break
            since = self._idle_since(s, view, r)
            if since is None:
                continue  # working, or not started yet (the start timeout is tracking's)
            idle = (view.now - since).total_seconds()
            if idle < q.idle_seconds:
                continue
            module = launches.backend(state, r.launcher)
            if (
                q.idle_action == "suspend"
                and hasattr(module, "suspend")
                and hasattr(module, "resume")
            ):
                launches.stop_instance(s, view.scope, box, state, r, action="suspend")
                r.state = "suspended"
                s.commit()
                action = "suspend"
            else:
                launches.stop_instance(s, view.scope, box, state, r, action="terminate")
                action = "terminate"
            self.event(s, q, action, f"{r.instance_id}: idle {idle:.0f}s > {q.idle_seconds:.0f}s")
            active -= 1

    @staticmethod
    def _idle_since(s: Session, view: QueueView, r: Instance) -> datetime | None:
        w = view.workers.get(r.id)
        if w is None or w.id in view.busy:
            return None
        done = s.scalar(
            select(WorkItem.finished_at)
            .where(WorkItem.worker_id == w.id, WorkItem.finished_at.is_not(None))
            .order_by(WorkItem.finished_at.desc())
            .limit(1)
        )
        return max(t for t in (done, w.registered_at, tracking.started(r)) if t is not None)


@dataclass
class QueueView:
    """What one pass saw of a queue: its live instance rows (running and suspended),
    the live worker of each (by row id), the workers running an item, and how many
    workers it lacks for its pending work (``need``; ``free`` counts the idle ones
    and the instances still starting)."""

    scope: registry.Scope
    now: datetime
    rows: list[Instance]
    running: list[Instance]
    suspended: list[Instance]
    workers: dict[int, Worker]
    busy: set[str | None]
    free: int
    need: int


def install(app: Any) -> None:
    """Run the loop while ``app`` runs (a service the server's lifespan starts and stops)."""

    def _start() -> None:
        loop = QueueLoop(app)
        app.state.queue_loop = loop
        loop.start()

    def _stop() -> None:
        loop = getattr(app.state, "queue_loop", None)
        if loop is not None:
            loop.stop()

    from ..server.runtime import add_service

    add_service(app, _start, _stop)
