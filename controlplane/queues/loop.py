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
* a worker with no live daemon ``START_TIMEOUT`` seconds after its launch → terminated.

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
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..db import utcnow
from ..launch import service as launches
from ..launch.models import Instance, Lease, Queue, QueueEvent
from ..models import Namespace, Worker, WorkItem
from ..registry import service as registry
from ..registry.crypto import SecretBox, load_or_create_key
from ..server import store
from ..server.deps import org_namespace_ids
from ..server.runtime import heartbeats_of
from . import service as queues

log = logging.getLogger("lakeshore.queues")

LEASE = "queues"
TICK_ENV = "LAKESHORE_QUEUE_TICK"
DEFAULT_TICK = 2.0
START_TIMEOUT = float(os.environ.get("LAKESHORE_QUEUE_START_TIMEOUT", "900"))
REFRESH_SECONDS = 30.0
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
        self._backoff: dict[int, tuple[float, int]] = {}
        self._busy = threading.Event()
        self._renewer: threading.Thread | None = None

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
                        # a failing provider is asked again later, not every tick
                        delay = min(MAX_BACKOFF, self.tick * 2 ** min(failures, 8))
                        self._backoff[qid] = (time.monotonic() + delay, failures + 1)
                        detail = getattr(exc, "detail", None) or str(exc)
                        self._event(s, row, "error", str(detail), dedupe=True)

    def _capacity(self) -> None:
        """Leases past their expiry end; pending leases are tried again."""
        from ..capacity import loop as capacity

        try:
            capacity.tick(self.app, self._box(), budget=max(0.2, self.tick / 2))
        except Exception:
            log.exception("capacity reconcile failed")

    def _box(self) -> SecretBox:
        box = getattr(self.app.state, "registry_secret_box", None)
        if box is None:
            box = SecretBox(load_or_create_key(self.app.state.settings.data_dir))
            self.app.state.registry_secret_box = box
        return box

    def _event(self, s: Session, q: Queue, action: str, detail: str, dedupe: bool = False) -> None:
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

    def reconcile(self, s: Session, q: Queue) -> None:
        if q.providers:  # several providers: placement with failover
            from ..capacity import queueplace

            return queueplace.reconcile(self, s, q)
        ns = s.get(Namespace, q.namespace_id)
        if ns is None:
            return
        scope = registry.Scope(namespace=ns, org_ids=org_namespace_ids(s, ns))
        box = self._box()
        state = self.app.state
        now = utcnow()
        rows = launches.rows_for(s, q.namespace_id, provider=q.provider_name, queue=q.name)
        last = self._refreshed.get(q.id)
        if rows and (last is None or (now - last).total_seconds() >= REFRESH_SECONDS):
            self._refreshed[q.id] = now
            launches.refresh(s, scope, box, state, rows)
            rows = [r for r in rows if r.terminated_at is None]

        live_seconds = state.settings.live_seconds
        overlay = heartbeats_of(self.app).overlay  # beats not written yet count as seen
        workers = {
            w.instance_id: w
            for w in s.scalars(
                select(Worker).where(
                    Worker.namespace_id == q.namespace_id,
                    Worker.provider_name == q.provider_name,
                    Worker.deregistered_at.is_(None),
                )
            )
            if store.is_live(overlay(w), live_seconds, now)
        }
        busy = set(
            s.scalars(
                select(WorkItem.worker_id).where(
                    WorkItem.namespace_id == q.namespace_id, WorkItem.state == "running"
                )
            )
        )
        suspended = [r for r in rows if r.state in ("suspended", "stopped", "stopping")]
        running = [r for r in rows if r not in suspended]

        def idle_since(r: Instance) -> datetime | None:
            w = workers.get(r.instance_id)
            if w is None:
                return None
            if w.id in busy:
                return None
            done = s.scalar(
                select(WorkItem.finished_at)
                .where(WorkItem.worker_id == w.id, WorkItem.finished_at.is_not(None))
                .order_by(WorkItem.finished_at.desc())
                .limit(1)
            )
            return max(t for t in (done, w.registered_at, r.created_at) if t is not None)

        # free: live workers serving this queue with nothing running, plus launched
        # instances whose daemon has not claimed yet (a slow boot is not launched twice)
        asleep = {r.instance_id for r in suspended}
        free_workers = [
            w
            for w in workers.values()
            if w.id not in busy
            and w.instance_id not in asleep
            and (not w.queues or q.name in w.queues)
        ]
        starting = [r for r in running if r.instance_id not in workers]
        free = len(free_workers) + len(starting)
        need = queues.pending(s, q) - free

        if need > 0:
            for r in suspended[:need]:
                launches.stop_instance(s, scope, box, state, r, action="resume")
                r.state = "pending"
                s.commit()
                self._event(s, q, "resume", f"{r.instance_id}: pending work and no free worker")
                need -= 1
            room = q.max_workers - len(rows)
            n = min(need, room)
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
                    scope,
                    box,
                    body,
                    state=state,
                    server_url=q.server_url,
                    data_dir=state.settings.data_dir,
                )
                ids = ", ".join(i["id"] for i in out.get("instances", []))
                self._event(
                    s,
                    q,
                    "launch",
                    f"{n} worker(s) for {need + free} pending item(s), {free} free: {ids}",
                )
            elif need > 0 and room <= 0:
                self._event(
                    s,
                    q,
                    "at-max",
                    f"{need} item(s) wait: the queue is at max {q.max_workers}",
                    dedupe=True,
                )
            return

        active = len(running)
        for r in running:
            if active <= q.min_workers:
                break
            since = idle_since(r)
            if since is None:
                if (
                    r.instance_id not in workers
                    and (now - r.created_at).total_seconds() > START_TIMEOUT
                ):
                    launches.stop_instance(s, scope, box, state, r, action="terminate")
                    self._event(
                        s,
                        q,
                        "terminate",
                        f"{r.instance_id}: no live daemon {START_TIMEOUT:.0f}s after launch",
                    )
                    active -= 1
                continue
            idle = (now - since).total_seconds()
            if idle < q.idle_seconds:
                continue
            module = launches.backend(state, r.launcher)
            if (
                q.idle_action == "suspend"
                and hasattr(module, "suspend")
                and hasattr(module, "resume")
            ):
                launches.stop_instance(s, scope, box, state, r, action="suspend")
                r.state = "suspended"
                s.commit()
                action = "suspend"
            else:
                launches.stop_instance(s, scope, box, state, r, action="terminate")
                action = "terminate"
            self._event(s, q, action, f"{r.instance_id}: idle {idle:.0f}s > {q.idle_seconds:.0f}s")
            active -= 1


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
