"""Which worker belongs to which launched instance, and what is out of step.

A daemon a launch left behind registers with the token minted for its instance
alone, so ``Worker.token_id == Instance.token_id`` ties the two (a worker registered
before workers recorded their token is matched by provider and instance id).

* :func:`take_out` — an instance terminated: its workers leave the count at once
  (deregistered, a run still going is lost with the reason), not when their
  heartbeats lapse.
* :func:`orphans` — live workers whose instance row is terminated, or that hold an
  instance token no live row holds: told to stop, and listed until they are gone.
* :func:`overdue` — daemon instances with no registered worker past the start
  timeout, counted from their latest start (a launch or a resume).

A worker is matched to its instance by identity alone (:func:`belongs`: the token,
else the instance id the launch gave it), never by comparing when each was written:
an SSH host's daemon registers while the launch call is still running, before its
row exists. A resume forgets the registrations of the start before it
(:func:`forget_start`), so a registered worker of the row is one of this start.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ..db import utcnow
from ..models import Token, Worker, WorkItem
from ..server import store
from .models import Instance, LaunchRequest

INSTANCE_TOKEN = "instance "
"""The label prefix of a token minted for one launched instance."""
START_TIMEOUT_ENV = "LAKESHORE_QUEUE_START_TIMEOUT"
DEFAULT_START_TIMEOUT = 900.0


def start_timeout() -> float:
    """Seconds an instance's daemon has to register after it (re)started."""
    return float(os.environ.get(START_TIMEOUT_ENV) or DEFAULT_START_TIMEOUT)


def worker_key(row: Instance) -> str:
    """The instance id its daemon registers under (a SLURM job's is its job name)."""
    details = row.details or {}
    return str(details.get("jobName") or row.instance_id)


def is_daemon(row: Instance) -> bool:
    """The instance was launched to leave a daemon (it has a token of its own)."""
    details = row.details or {}
    return row.token_id is not None or details.get("dispatch") == "daemon"


def started(row: Instance) -> datetime:
    return row.started_at or row.created_at


def _overlay(state: Any) -> Any:
    hb = getattr(state, "heartbeats", None)
    return hb.overlay if hb is not None else (lambda w: w)


def live_workers(
    session: Session, state: Any, ns_id: int, provider: str | None = None
) -> list[Worker]:
    """The namespace's live workers (unwritten heartbeats counted)."""
    q = select(Worker).where(Worker.namespace_id == ns_id, Worker.deregistered_at.is_(None))
    if provider:
        q = q.where(Worker.provider_name == provider)
    overlay = _overlay(state)
    live = float(state.settings.live_seconds)
    now = utcnow()
    return [w for w in session.scalars(q) if store.is_live(overlay(w), live, now)]


def belongs(worker: Worker, row: Instance) -> bool:
    """``worker`` is ``row``'s daemon: it registered with the row's token, or under
    the row's instance id."""
    if worker.provider_name != row.provider_name:
        return False
    if worker.token_id is not None and worker.token_id == row.token_id:
        return True
    return worker.instance_id == worker_key(row)


def workers_of(session: Session, row: Instance) -> list[Worker]:
    """Every registered worker of ``row`` (live or not, not deregistered)."""
    q = select(Worker).where(
        Worker.namespace_id == row.namespace_id,
        Worker.provider_name == row.provider_name,
        Worker.deregistered_at.is_(None),
    )
    return [w for w in session.scalars(q) if belongs(w, row)]


def take_out(session: Session, state: Any, row: Instance, reason: str) -> list[str]:
    """Deregister ``row``'s workers now (flushed, committed by the caller); a run
    still going on one is lost with ``reason``. Returns their ids."""
    now = utcnow()
    gone = workers_of(session, row)
    notifier = getattr(state, "notifier", None)
    for w in gone:
        w.deregistered_at = now
        session.execute(
            update(WorkItem)
            .where(WorkItem.worker_id == w.id, WorkItem.state == "running")
            .values(state="lost", error=reason, finished_at=now)
        )
        if notifier is not None:
            notifier.publish(session, f"forget:worker:{w.id}")
    hb = getattr(state, "heartbeats", None)
    if hb is not None:
        for w in gone:
            hb.forget(w.id)
    return [w.id for w in gone]


@dataclass(frozen=True)
class Orphan:
    """A live worker with no live instance row behind it."""

    worker: Worker
    row: Instance | None  # its terminated row, if there is one
    reason: str

    def wire(self, namespace: str) -> dict[str, Any]:
        w, row = self.worker, self.row
        return {
            "id": row.instance_id if row is not None else w.instance_id,
            "provider": w.provider_name,
            "launcher": row.launcher if row is not None else None,
            "namespace": namespace,
            "state": "orphan",
            "queue": row.queue if row is not None else None,
            "clientToken": row.client_token if row is not None else None,
            "details": {"workerId": w.id, "workerInstanceId": w.instance_id, "host": w.host},
            "reason": self.reason,
            "createdAt": None,
            "terminatedAt": None,
        }


def in_flight(session: Session, ns_id: int) -> set[int]:
    """Tokens of launches not done yet: their daemons may register before the
    launch records their rows."""
    out: set[int] = set()
    for result in session.scalars(
        select(LaunchRequest.result).where(
            LaunchRequest.namespace_id == ns_id, LaunchRequest.state != "done"
        )
    ):
        out.update(int(t) for t in (result or {}).get("tokenIds") or [])
    return out


def _iso(dt: datetime | None) -> str:
    return dt.isoformat().replace("+00:00", "Z") if dt else "?"


def orphans(
    session: Session, state: Any, ns_id: int, workers: Iterable[Worker] | None = None
) -> list[Orphan]:
    """Live workers whose instance row is terminated, or that registered with an
    instance token no row holds. A worker started by hand (a person's or a
    connect token) is never an orphan."""
    found = list(workers) if workers is not None else live_workers(session, state, ns_id)
    if not found:
        return []
    token_ids = {w.token_id for w in found if w.token_id is not None} - in_flight(session, ns_id)
    instance_tokens = set()
    if token_ids:
        instance_tokens = set(
            session.scalars(
                select(Token.id).where(
                    Token.id.in_(token_ids), Token.label.like(INSTANCE_TOKEN + "%")
                )
            )
        )
    providers = {w.provider_name for w in found}
    rows = list(
        session.scalars(
            select(Instance).where(
                Instance.namespace_id == ns_id, Instance.provider_name.in_(providers)
            )
        )
    )
    out: list[Orphan] = []
    for w in found:
        if w.token_id is not None and w.token_id not in token_ids:
            continue  # its launch is still under way: the row comes when it returns
        if w.token_id is not None and w.token_id not in instance_tokens:
            continue  # a person's or a connect token: a daemon started by hand
        by_token = [r for r in rows if w.token_id is not None and r.token_id == w.token_id]
        by_id = [r for r in rows if belongs(w, r)]
        if w.token_id is None and not by_id:
            continue  # nothing launched it: a daemon started by hand
        if any(r.terminated_at is None for r in by_token + by_id):
            continue
        mine = by_token or by_id
        last = max(mine, key=lambda r: r.id) if mine else None
        if last is not None:
            when = _iso(last.terminated_at)
            reason = f"its instance {last.instance_id} was {last.state} at {when}"
            if w.token_id is not None and not by_token:
                reason += "; no instance row holds the token it registered with"
        else:
            reason = "it holds an instance token that no instance row holds"
        out.append(Orphan(w, last, reason))
    return out


def registered(session: Session, ns_id: int) -> list[Worker]:
    """The namespace's workers that have not deregistered (live or quiet)."""
    return list(
        session.scalars(
            select(Worker).where(Worker.namespace_id == ns_id, Worker.deregistered_at.is_(None))
        )
    )


def forget_start(session: Session, state: Any, row: Instance) -> list[str]:
    """Before ``row`` starts again (a resume): its workers from the start before are
    deregistered, so only a daemon that registers after this start counts for it
    (one still running re-registers at its next heartbeat's 404)."""
    return take_out(session, state, row, "the instance was restarted; the run was lost")


def overdue(rows: Sequence[Instance], workers: Sequence[Worker], now: datetime) -> list[Instance]:
    """Running daemon instances with no registered daemon of their own (matched by
    :func:`belongs`), past the start timeout from their latest start (``workers``:
    the registered ones). A daemon that registered and then went quiet is not a
    start that failed; one that registered before its row was written is the
    row's all the same."""
    limit = start_timeout()
    out = []
    for r in rows:
        if r.terminated_at is not None or not is_daemon(r):
            continue
        if r.state in ("suspended", "stopped", "stopping"):
            continue
        if any(belongs(w, r) for w in workers):
            continue
        if (now - started(r)).total_seconds() > limit:
            out.append(r)
    return out
