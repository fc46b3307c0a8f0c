"""Daemons register, heartbeat, long-poll for work, report, deregister; anyone in
the namespace reads the claims on a provider."""

from __future__ import annotations

import time

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select
from sqlalchemy.orm import Session

from ...models import Worker
from .. import store
from ..deps import (
    Access,
    access_to,
    caller_of,
    get_session,
    require_namespace,
    require_namespace_released,
)
from ..errors import ApiError
from ..schemas import (
    Claims,
    ClaimsMany,
    ClaimsQuery,
    HeartbeatOut,
    WorkerIn,
    WorkerOut,
    WorkerRegistered,
    WorkOut,
    WorkResultIn,
)
from ..settings import MAX_WAIT_SECONDS

router = APIRouter(prefix="/api/namespaces/{ns}")

POLL_RECHECK_SECONDS = 1.0


def _unknown_worker(worker_id: str) -> ApiError:
    return ApiError(
        404, "not_found", f"no registered worker {worker_id!r} (register again: POST .../workers)"
    )


def _worker(session: Session, access: Access, worker_id: str) -> Worker:
    row = store.find_worker(session, access.namespace.id, worker_id)
    if row is None:
        raise _unknown_worker(worker_id)
    return row


def _live(request: Request) -> float:
    return float(request.app.state.settings.live_seconds)


@router.post("/workers", response_model=WorkerRegistered, status_code=201)
def register_worker(
    body: WorkerIn,
    request: Request,
    response: Response,
    access: Access = Depends(require_namespace),
    session: Session = Depends(get_session),
) -> WorkerRegistered:
    settings = request.app.state.settings
    row, created = store.register(session, access.namespace.id, body)
    if not created:
        response.status_code = 200
    return WorkerRegistered(
        worker_id=row.id,
        provider_name=row.provider_name,
        instance_id=row.instance_id,
        heartbeat_seconds=settings.heartbeat_seconds,
        live_seconds=settings.live_seconds,
    )


@router.get("/workers", response_model=list[WorkerOut])
def list_workers(
    request: Request,
    provider: str | None = None,
    access: Access = Depends(require_namespace),
    session: Session = Depends(get_session),
) -> list[WorkerOut]:
    query = select(Worker).where(Worker.namespace_id == access.namespace.id)
    if provider is not None:
        query = query.where(Worker.provider_name == provider)
    rows = session.scalars(query.order_by(Worker.registered_at)).all()
    return [store.worker_out(w, _live(request)) for w in rows]


@router.post("/workers/{worker_id}/heartbeat", response_model=HeartbeatOut)
async def heartbeat(ns: str, worker_id: str, request: Request) -> HeartbeatOut:
    """The hottest route: auth and the write in one worker-thread hop."""
    settings = request.app.state.settings
    make_session = request.app.state.sessionmaker

    def beat() -> HeartbeatOut:
        with make_session() as session:
            access = access_to(ns, caller_of(request, session), session)
            seen = store.beat(session, access.namespace.id, worker_id)
        if seen is None:
            raise _unknown_worker(worker_id)
        return HeartbeatOut(
            worker_id=worker_id,
            last_seen=seen,
            heartbeat_seconds=settings.heartbeat_seconds,
            live_seconds=settings.live_seconds,
        )

    return await run_in_threadpool(beat)


@router.delete("/workers/{worker_id}", status_code=204)
def deregister_worker(
    worker_id: str,
    access: Access = Depends(require_namespace),
    session: Session = Depends(get_session),
) -> Response:
    row = _worker(session, access, worker_id)
    store.deregister(session, row)
    return Response(status_code=204)


@router.get("/workers/{worker_id}/work", response_model=WorkOut)
async def poll_work(
    worker_id: str,
    request: Request,
    wait: float = Query(0.0, ge=0, le=MAX_WAIT_SECONDS),
    access: Access = Depends(require_namespace_released),
) -> WorkOut | Response:
    """Long-poll: the oldest queued item for this worker's provider and queues, or
    204 after ``wait`` seconds. Starting a poll counts as a heartbeat."""
    make_session = request.app.state.sessionmaker
    notifier = request.app.state.notifier
    live = _live(request)
    ns_id = access.namespace.id
    deadline = time.monotonic() + wait

    def attempt(first: bool) -> WorkOut | None:
        with make_session() as session:
            row = store.find_worker(session, ns_id, worker_id)
            if row is None:
                raise _unknown_worker(worker_id)
            if first:  # asking for work is a sign of life and makes the worker active
                store.touch(session, row, polled=True)
            item = store.try_claim(session, row)
            return store.work_out(session, item, live) if item is not None else None

    first = True
    while True:
        out = await run_in_threadpool(attempt, first)
        first = False
        if out is not None:
            return out
        remaining = deadline - time.monotonic()
        if remaining <= 0 or await request.is_disconnected():
            return Response(status_code=204)
        await notifier.wait(min(remaining, POLL_RECHECK_SECONDS))


@router.post("/workers/{worker_id}/work/{work_id}/result", response_model=WorkOut)
def report_result(
    worker_id: str,
    work_id: str,
    body: WorkResultIn,
    request: Request,
    access: Access = Depends(require_namespace),
    session: Session = Depends(get_session),
) -> WorkOut:
    row = _worker(session, access, worker_id)
    item = store.find_work(session, access.namespace.id, work_id)
    if item is None:
        raise ApiError(404, "not_found", f"no work item {work_id!r}")
    if item.worker_id != row.id:
        raise ApiError(409, "conflict", f"work item {work_id!r} is not assigned to this worker")
    if item.state != "running":
        raise ApiError(409, "conflict", f"work item {work_id!r} is already {item.state}")
    store.touch(session, row)
    store.report(session, item, body)
    request.app.state.notifier.notify()
    return store.work_out(session, item, _live(request))


@router.get("/providers/{name}/claims", response_model=Claims)
def provider_claims(
    name: str,
    request: Request,
    identity: str | None = None,
    access: Access = Depends(require_namespace),
    session: Session = Depends(get_session),
) -> Claims:
    """Who claims provider ``name``. Zero live workers is a normal answer. With
    ``identity``, only the workers of that provider identity (see store.counts_for)."""
    return store.claims(session, access.namespace.id, name, _live(request), identity or None)


@router.post("/claims/query", response_model=ClaimsMany)
def claims_query(
    body: ClaimsQuery,
    request: Request,
    access: Access = Depends(require_namespace),
    session: Session = Depends(get_session),
) -> ClaimsMany:
    """The claims of many providers in one request, in the order asked (a read:
    POST only because the list does not fit a query string)."""
    wanted = [(p.name, p.identity) for p in body.providers]
    return ClaimsMany(
        claims=store.claims_many(session, access.namespace.id, wanted, _live(request))
    )
