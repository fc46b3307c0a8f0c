"""Hybrid dispatch (``dispatch: hybrid`` on SSH and SLURM providers): a queue's
first work item runs **direct** — an SSH session or an ``sbatch`` of its command,
started at once — while a daemon is installed behind it; later items wait for the
daemon and go through it once it claims. If the daemon does not come up (its launch
fails, or it never registers within the start timeout) the queue keeps working
direct, one run per item, and says so in its decisions.

A direct run is an instance row of its own (client token ``hq<queue id>-…``, no
queue, the item's id in ``details.workItem``); each pass reads its outcome from the
launcher (``launch.service.refresh``) and writes it to the item: ``succeeded`` or
``failed`` with the exit code and output tail. The item is marked ``running`` by one
``UPDATE … WHERE state = 'queued'`` before the run starts, so a daemon claiming at
the same moment can never run it too.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ..db import utcnow
from ..models import WorkItem
from ..registry import service as registry
from ..registry.service.common import RegistryError
from . import dispatch
from . import service as launches
from .models import Instance, Queue

DIRECT_FOR = 600.0
"""After a daemon failed to come up, how long the queue works direct before it tries
installing one again (seconds)."""


def is_hybrid(s: Session, scope: Any, q: Queue) -> bool:
    try:
        row = registry.get_provider_row(s, scope, q.provider_name)
    except RegistryError:
        return False
    return dispatch.of_provider(row) == dispatch.HYBRID


def _prefix(q: Queue) -> str:
    return f"hq{q.id}-"


def runs(s: Session, q: Queue, *, live_only: bool = True) -> list[Instance]:
    """The queue's direct runs (live ones, or every one)."""
    query = select(Instance).where(
        Instance.namespace_id == q.namespace_id,
        Instance.provider_name == q.provider_name,
        Instance.client_token.startswith(_prefix(q)),
    )
    if live_only:
        query = query.where(Instance.terminated_at.is_(None))
    return list(s.scalars(query.order_by(Instance.id)))


def settle(loop: Any, s: Session, q: Queue, scope: Any) -> None:
    """Read the outcome of the queue's direct runs and record it on their items."""
    state, box = loop.app.state, loop.box()
    live = runs(s, q)
    if live:
        launches.refresh(s, scope, box, state, live)
    cutoff = utcnow() - timedelta(hours=1)
    for r in runs(s, q, live_only=False):
        if r.terminated_at is None or r.terminated_at < cutoff:
            continue
        item_id = (r.details or {}).get("workItem")
        item = s.get(WorkItem, item_id) if item_id else None
        if item is None or item.state != "running" or item.worker_id is not None:
            continue
        outcome = (r.details or {}).get("outcome") or {}
        code = outcome.get("exitCode")
        ok = r.state.lower() == "succeeded" or (code == 0 and r.state.lower() != "failed")
        item.state = "succeeded" if ok else "failed"
        item.exit_code = code if isinstance(code, int) else None
        item.output_tail = str(outcome.get("outputTail") or "")[-65536:]
        item.error = None if ok else (outcome.get("error") or f"the direct run ended {r.state}")
        item.finished_at = utcnow()
        s.commit()
        loop.event(
            s, q, "direct-done", f"item {item.id} ran direct on {r.instance_id}: {item.state}"
        )


def daemon_failure(s: Session, q: Queue) -> str | None:
    """Why the queue's latest daemon did not come up, when it failed recently."""
    row = s.scalar(
        select(Instance)
        .where(
            Instance.namespace_id == q.namespace_id,
            Instance.provider_name == q.provider_name,
            Instance.queue == q.name,
        )
        .order_by(Instance.id.desc())
        .limit(1)
    )
    if row is None or row.state != "failed" or row.terminated_at is None:
        return None
    if (utcnow() - row.terminated_at).total_seconds() > DIRECT_FOR:
        return None
    return str((row.details or {}).get("reason") or "it failed")


def run_direct(loop: Any, s: Session, q: Queue, scope: Any, item: WorkItem, why: str) -> bool:
    """Start ``item`` as a direct run; False when a daemon claimed it first."""
    state, box = loop.app.state, loop.box()
    now = utcnow()
    res = s.execute(
        update(WorkItem)
        .where(WorkItem.id == item.id, WorkItem.state == "queued")
        .values(state="running", started_at=now)
        .execution_options(synchronize_session=False)
    )
    s.commit()
    if res.rowcount != 1:  # type: ignore[attr-defined]
        return False
    body = {
        "provider": q.provider_name,
        "count": 1,
        "command": item.command,
        "dispatch": "direct",
        "clientToken": f"{_prefix(q)}{uuid.uuid4().hex[:24]}",
    }
    try:
        out = launches.launch(
            s, scope, box, body, state=state, server_url=q.server_url,
            data_dir=state.settings.data_dir,
        )  # fmt: skip
    except Exception as exc:
        s.rollback()
        s.execute(
            update(WorkItem)
            .where(WorkItem.id == item.id, WorkItem.state == "running")
            .values(state="queued", started_at=None)
            .execution_options(synchronize_session=False)
        )
        s.commit()
        raise exc
    ids = [i["id"] for i in out.get("instances", [])]
    for r in s.scalars(
        select(Instance).where(
            Instance.namespace_id == q.namespace_id,
            Instance.provider_name == q.provider_name,
            Instance.instance_id.in_(ids),
            Instance.terminated_at.is_(None),
        )
    ):
        r.details = {**(r.details or {}), "workItem": item.id}
    s.commit()
    loop.event(s, q, "direct", f"item {item.id} runs direct on {', '.join(ids)}: {why}")
    return True


def grow(loop: Any, s: Session, q: Queue, view: Any) -> None:
    """Pending work on a hybrid provider (see the module's docstring)."""
    waiting = list(
        s.scalars(
            select(WorkItem)
            .where(
                WorkItem.namespace_id == q.namespace_id,
                WorkItem.provider_name == q.provider_name,
                WorkItem.queue == q.name,
                WorkItem.state == "queued",
            )
            .order_by(WorkItem.created_at, WorkItem.id)
        )
    )
    if not waiting:
        return
    failed = daemon_failure(s, q)
    in_flight = len(runs(s, q))
    until, since = loop.direct.get(q.id, (0.0, "the daemon did not come up"))
    if failed is not None or until > utcnow().timestamp():
        why = failed or since
        room = max(0, q.max_workers - in_flight)
        for item in waiting[:room]:
            run_direct(loop, s, q, view.scope, item, f"working direct: {why}")
        if not room:
            loop.event(
                s, q, "at-max", f"{len(waiting)} item(s) wait for a direct run slot", dedupe=True
            )
        return
    room = q.max_workers - len(view.rows)
    if view.rows:  # a daemon is installed or starting: more of them, as a queue grows
        if view.need > 0 and room > 0:
            _daemons(loop, s, q, view, min(view.need, room), "more pending work")
        return
    # no daemon yet: the first item runs direct now, a daemon is installed behind it
    rest = waiting
    if in_flight == 0:
        run_direct(
            loop, s, q, view.scope, waiting[0], "the first item, while a daemon is installed"
        )
        rest = waiting[1:]
    if room > 0:
        _daemons(loop, s, q, view, max(1, min(len(rest), room)), "behind the direct run")


def _daemons(loop: Any, s: Session, q: Queue, view: Any, count: int, why: str) -> None:
    state, box = loop.app.state, loop.box()
    under = launches.limit_room(s, view.scope, state, q.provider_name, dispatch.DAEMON)
    if under is not None and under < count:
        count = under  # the provider's instance limit: never past it
        if count <= 0:
            loop.event(s, q, "at-limit", f"{q.provider_name} is at its instance limit", dedupe=True)
            return
    body: dict[str, Any] = {
        "provider": q.provider_name,
        "count": count,
        "queue": q.name,
        "dispatch": "daemon",
        "clientToken": f"q{q.id}-{uuid.uuid4().hex[:24]}",
    }
    if q.mode:
        body["mode"] = q.mode
    try:
        out = launches.launch(
            s, view.scope, box, body, state=state, server_url=q.server_url,
            data_dir=state.settings.data_dir,
        )  # fmt: skip
    except Exception as exc:
        s.rollback()
        why = getattr(exc, "detail", None) or str(exc)
        loop.direct[q.id] = (
            utcnow().timestamp() + DIRECT_FOR,
            f"the daemon did not come up ({why})",
        )
        loop.event(
            s, q, "daemon-failed",
            f"the daemon could not be installed on {q.provider_name}: {why}; working direct",
        )  # fmt: skip
        return
    ids = ", ".join(i["id"] for i in out.get("instances", []))
    loop.event(s, q, "launch", f"{count} daemon worker(s), {why}: {ids}")
