"""Placement for a queue that names several providers (``providers`` and a
``strategy``), inside the one reconcile loop, under its database lease.

Work for the queue may be submitted to any of its providers. Each pass:

1. **Re-home** queued items: a provider with more queued items than free workers
   (live ones serving the queue with nothing running, plus launched instances that
   have not claimed yet) hands the surplus, oldest first, to a provider with free
   workers to spare. Moving an item is one ``UPDATE … WHERE state = 'queued'`` and a
   claim is another, so an item runs once whichever wins.
2. **Grow** for what is left, never past ``max`` (counted over every provider):
   the placement decision (``decide``, the queue's strategy, its providers in their
   order for ``priority``) picks the provider and offer; the launch goes there and
   the surplus moves to it. A launch refused for capacity or quota (``refusal``)
   puts that provider in back-off and the next one is tried in the same pass (a
   SLURM job that would not start within ``SLURM_START_WITHIN`` seconds, a full
   partition, counts as one).
3. **Shrink** as a single-provider queue does: idle workers past ``idleSeconds``
   while above ``min`` are suspended or terminated; a launch that never claimed
   within the start timeout is terminated.

Every decision is a ``queue_events`` row (``lakeshore queues status``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ..db import utcnow
from ..launch import dispatch, tracking
from ..launch import service as launches
from ..launch.models import Instance, Queue
from ..models import Namespace, Worker, WorkItem
from ..registry import service as registry
from ..registry.service.common import RegistryError
from ..server.deps import org_namespace_ids
from ..server.runtime import heartbeats_of
from . import backoff
from .decide import ProviderState, Request, decide
from .refusal import capacity_refusal
from .service import held, snapshot

ASLEEP = ("suspended", "stopped", "stopping")
SLURM_START_WITHIN = 30.0
"""Seconds a SLURM job of a queue over several providers may wait to start before
its launch counts as refused for capacity (an offer's ``launch.start_within`` wins)."""


def queued(s: Session, q: Queue, providers: Sequence[str]) -> list[WorkItem]:
    return list(
        s.scalars(
            select(WorkItem)
            .where(
                WorkItem.namespace_id == q.namespace_id,
                WorkItem.queue == q.name,
                WorkItem.provider_name.in_(list(providers)),
                WorkItem.state == "queued",
            )
            .order_by(WorkItem.created_at, WorkItem.id)
        )
    )


def move(s: Session, items: Sequence[WorkItem], provider: str, notifier: Any = None) -> int:
    """Hand queued ``items`` to ``provider``; an item claimed meanwhile stays put. The
    provider's waiting polls are woken on every replica, as a submit wakes them."""
    moved = 0
    key = f"work:{items[0].namespace_id}:{provider}" if items else ""
    if notifier is not None and items:
        notifier.publish(s, key)
    for item in items:
        res = s.execute(
            update(WorkItem)
            .where(WorkItem.id == item.id, WorkItem.state == "queued")
            .values(provider_name=provider)
            .execution_options(synchronize_session=False)
        )
        moved += res.rowcount  # type: ignore[attr-defined]
    s.commit()
    if notifier is not None and items:
        notifier.fire(key)
    return moved


def reconcile(loop: Any, s: Session, q: Queue) -> None:
    ns = s.get(Namespace, q.namespace_id)
    if ns is None:
        return
    state = loop.app.state
    providers = list(dict.fromkeys(q.providers or [q.provider_name]))
    scope = registry.Scope(
        namespace=ns,
        org_ids=org_namespace_ids(s, ns),
        unscoped=bool(getattr(state, "unscoped_listings", True)),
    )
    box = loop.box()
    now = utcnow()
    rows = [
        r
        for r in launches.rows_for(s, q.namespace_id, queue=q.name)
        if r.provider_name in providers
    ]
    if rows and loop.refresh_due(q.id, now):
        launches.refresh(s, scope, box, state, rows)
        rows = [r for r in rows if r.terminated_at is None]

    # providers that cannot grow daemon workers (their dispatch changed since) sit out
    providers = [p for p in providers if _grows(s, scope, p, q, loop)]
    if not providers:
        return
    rows = [r for r in rows if r.provider_name in providers]
    # a live worker counts through a live instance of this queue, or as any daemon of
    # the providers serving it; an orphan is no free worker
    live = [
        w
        for p in providers
        for w in tracking.live_workers(s, state, q.namespace_id, p)
        if not w.queues or q.name in w.queues
    ]
    lost = {o.worker.id for o in tracking.orphans(s, state, q.namespace_id, live)}
    workers = [w for w in live if w.id not in lost]
    of_row: dict[int, Worker] = {}
    for r in rows:
        w = next((w for w in workers if tracking.belongs(w, r)), None)
        if w is not None:
            of_row[r.id] = w
    busy = set(
        s.scalars(
            select(WorkItem.worker_id).where(
                WorkItem.namespace_id == q.namespace_id, WorkItem.state == "running"
            )
        )
    )
    # a worker someone holds a lease on is not free for the queue's work
    leased = held(s, q.namespace_id)
    busy |= {w.id for w in workers if w in leased}
    suspended = [r for r in rows if r.state in ASLEEP]
    running = [r for r in rows if r not in suspended]
    asleep = {of_row[r.id].id for r in suspended if r.id in of_row}
    free: dict[str, int] = dict.fromkeys(providers, 0)
    for w in workers:
        if w.id not in busy and w.id not in asleep:
            free[w.provider_name] += 1
    for r in running:
        if r.id not in of_row:
            free[r.provider_name] += 1  # launched, not claimed yet: a slow boot counts
    waiting: dict[str, list[WorkItem]] = {p: [] for p in providers}
    for item in queued(s, q, providers):
        waiting[item.provider_name].append(item)

    # 1. re-home surplus items onto spare free workers
    surplus: list[WorkItem] = []
    for p in providers:
        extra = len(waiting[p]) - free[p]
        if extra > 0:
            surplus.extend(waiting[p][-extra:])
    surplus.sort(key=lambda i: (i.created_at, i.id))
    for p in providers:
        spare = free[p] - len(waiting[p])
        if spare > 0 and surplus:
            take, surplus = surplus[:spare], surplus[spare:]
            moved = move(s, take, p, state.notifier)
            if moved:
                loop.event(
                    s, q, "place", f"{moved} queued item(s) moved to {p}: it has free workers"
                )

    need = len(surplus)
    if need > 0:
        for r in suspended[:need]:
            launches.stop_instance(s, scope, box, state, r, action="resume")
            r.state = "pending"
            s.commit()
            loop.event(s, q, "resume", f"{r.instance_id}: pending work and no free worker")
            need -= 1
            surplus = surplus[1:]
        room = q.max_workers - len(rows)
        n = min(need, room)
        if n > 0:
            _grow(loop, s, q, scope, box, providers, n, surplus)
        elif need > 0 and room <= 0:
            loop.event(
                s,
                q,
                "at-max",
                f"{need} item(s) wait: the queue is at max {q.max_workers}",
                dedupe=True,
            )
        return
    _shrink(loop, s, q, scope, box, running, of_row, busy, now)


def _grow(
    loop: Any,
    s: Session,
    q: Queue,
    scope: registry.Scope,
    box: Any,
    providers: list[str],
    n: int,
    surplus: list[WorkItem],
) -> None:
    state = loop.app.state
    req = Request(strategy=q.strategy or "priority", providers=tuple(providers))
    refused: list[str] = []
    for _ in range(len(providers) + 1):  # each refusal puts one in back-off
        snap = snapshot(
            s, scope, state.settings.live_seconds, heartbeats_of(loop.app).overlay, only=providers
        )
        # a queue grows by launching: idle workers of another queue are not its own
        states = {k: ProviderState(**{**_fields(v), "idle": {}}) for k, v in snap.states().items()}
        doc = decide(req, snap.catalog(), states, snap.now, order=providers)
        chosen = doc["chosen"]
        if chosen is None:
            loop.event(
                s,
                q,
                "no-capacity",
                f"{len(surplus)} item(s) wait: {doc['summary']}"
                + (f" ({'; '.join(refused)})" if refused else ""),
                dedupe=True,
            )
            return
        p, offer = chosen["provider"], chosen["offer"]
        view = snap.providers[p]
        count = n if view.limit is None else max(1, min(n, view.limit - view.instances))
        spec = next(o for o in view.offers if o.name == offer)
        body: dict[str, Any] = {
            "provider": p,
            "count": count,
            "queue": q.name,
            "clientToken": f"q{q.id}-{uuid.uuid4().hex[:24]}",
        }
        if q.mode:
            body["mode"] = q.mode
        if spec.launch:
            body["runConfig"] = dict(spec.launch)
        if view.launcher == "SLURM" and len(providers) > 1:
            # a full partition would queue the job: with somewhere else to go, go there
            body.setdefault("runConfig", {}).setdefault("start_within", SLURM_START_WITHIN)
        if view.dispatch == dispatch.HYBRID:
            body["dispatch"] = dispatch.DAEMON  # the queue grows daemon workers
        try:
            out = launches.launch(
                s,
                scope,
                box,
                body,
                state=state,
                server_url=q.server_url,
                data_dir=state.settings.data_dir,
            )
        except RegistryError as exc:
            why = capacity_refusal(f"{exc.code} {exc.detail}")
            if why is None:
                raise
            s.rollback()
            b = backoff.refused(s, q.namespace_id, p, why)
            refused.append(f"{p}: {why}")
            loop.event(
                s,
                q,
                "refused",
                f"{p} refused the launch ({why}); back-off until "
                f"{b.until.isoformat().replace('+00:00', 'Z')} (refusal {b.failures} in a row); "
                "trying the next provider",
            )
            continue
        backoff.cleared(s, q.namespace_id, p)
        ids = [i["id"] for i in out.get("instances", [])]
        for inst in s.scalars(
            select(Instance).where(
                Instance.namespace_id == q.namespace_id,
                Instance.provider_name == p,
                Instance.instance_id.in_(ids),
            )
        ):
            inst.details = {**(inst.details or {}), "offer": offer}
        s.commit()
        already = sum(1 for i in surplus if i.provider_name == p)
        mine = [i for i in surplus if i.provider_name != p][: max(0, count - already)]
        moved = move(s, mine, p, state.notifier) if mine else 0
        price = chosen["pricePerHour"]
        cost = f" at {price:g}/h" if price is not None else ""
        loop.event(
            s,
            q,
            "launch",
            f"{count} worker(s) on {p}/{offer}{cost} ({req.strategy}) for {len(surplus)} "
            f"waiting item(s), {moved} moved there: {', '.join(ids)}",
        )
        return


def _grows(s: Session, scope: registry.Scope, name: str, q: Queue, loop: Any) -> bool:
    """Whether the queue can grow daemon workers on ``name`` now (else it says why)."""
    try:
        row = registry.get_provider_row(s, scope, name)
    except RegistryError as exc:
        loop.event(s, q, "skip", f"{name}: {exc.detail}", dedupe=True)
        return False
    refusal = dispatch.queue_refusal(name, dispatch.of_provider(row))
    if refusal:
        loop.event(s, q, "skip", refusal, dedupe=True)
        return False
    return True


def _fields(st: ProviderState) -> dict[str, Any]:
    return {f: getattr(st, f) for f in ProviderState.__dataclass_fields__}


def _shrink(
    loop: Any,
    s: Session,
    q: Queue,
    scope: registry.Scope,
    box: Any,
    running: list[Instance],
    workers: dict[int, Worker],
    busy: set[Any],
    now: datetime,
) -> None:
    """Idle workers past ``idle_seconds`` above ``min`` go (a start that never
    registers is launch tracking's to fail, as for a single-provider queue)."""
    state = loop.app.state
    active = len(running)
    for r in running:
        if active <= q.min_workers:
            break
        w = workers.get(r.id)
        if w is None:
            continue
        if w.id in busy:
            continue
        done = s.scalar(
            select(WorkItem.finished_at)
            .where(WorkItem.worker_id == w.id, WorkItem.finished_at.is_not(None))
            .order_by(WorkItem.finished_at.desc())
            .limit(1)
        )
        since = max(t for t in (done, w.registered_at, tracking.started(r)) if t is not None)
        idle = (now - since).total_seconds()
        if idle < q.idle_seconds:
            continue
        module = launches.backend(state, r.launcher)
        action = "terminate"
        if q.idle_action == "suspend" and hasattr(module, "suspend") and hasattr(module, "resume"):
            action = "suspend"
        launches.stop_instance(s, scope, box, state, r, action=action)
        if action == "suspend":
            r.state = "suspended"
            s.commit()
        loop.event(
            s,
            q,
            action,
            f"{r.instance_id} on {r.provider_name}: idle {idle:.0f}s > {q.idle_seconds:.0f}s",
        )
        active -= 1
