"""Submit a shell command for a provider (optionally a queue) and read its result."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session

from ...names import is_name
from .. import store
from ..deps import Access, SessionRoute, get_session, require_namespace
from ..errors import ApiError
from ..fleet.wakeup import Wakeup
from ..runtime import heartbeats_of
from ..schemas import WorkIn, WorkOut
from ..settings import MAX_WAIT_SECONDS

router = APIRouter(route_class=SessionRoute, prefix="/api/namespaces/{ns}")

RECHECK_SECONDS = 15.0  # a safety net: results wake waiters through the Notifier


@router.post("/providers/{name}/work", response_model=WorkOut, status_code=201)
def submit_work(
    name: str,
    body: WorkIn,
    request: Request,
    access: Access = Depends(require_namespace),
    session: Session = Depends(get_session),
) -> WorkOut:
    if not is_name(name):
        raise ApiError(422, "validation_error", f"invalid provider name {name!r}")
    notifier = request.app.state.notifier
    key = f"work:{access.namespace.id}:{name}"
    notifier.publish(session, key)
    item = store.submit(session, access.namespace.id, name, body)
    notifier.fire(key)
    return store.work_out(session, item, request.app.state.settings.live_seconds)


@router.get("/work/{work_id}", response_model=WorkOut)
async def get_work(
    work_id: str,
    request: Request,
    wait: float = Query(0.0, ge=0, le=MAX_WAIT_SECONDS),
    access: Access = Depends(require_namespace),
) -> WorkOut:
    """One work item; with ``wait``, block until it finishes or the wait is over."""
    make_session = request.app.state.sessionmaker
    live = request.app.state.settings.live_seconds
    hb = heartbeats_of(request.app)
    ns_id = access.namespace.id
    deadline = time.monotonic() + wait

    def read() -> WorkOut:
        with make_session() as session:
            item = store.find_work(session, ns_id, work_id)
            if item is None:
                raise ApiError(404, "not_found", f"no work item {work_id!r}")
            return store.work_out(session, item, live, hb.overlay)

    notifier = request.app.state.notifier
    # shutting down: answer the item as it stands rather than hold the shutdown
    draining: Wakeup | None = getattr(request.app.state, "draining", None)
    while True:
        event = notifier.event(f"done:{work_id}")
        out = await run_in_threadpool(read)
        remaining = deadline - time.monotonic()
        if (
            out.state in store.FINISHED
            or remaining <= 0
            or (draining is not None and draining.is_set())
            or await request.is_disconnected()
        ):
            return out
        # a worker that goes away turns its run "lost" without a report: recheck at
        # the live bound too
        try:
            await notifier.wait(event, min(remaining, RECHECK_SECONDS, live), until=draining)
        except asyncio.CancelledError:  # cancelled at the grace's end: as it stands
            return out
