"""Daemons register, heartbeat, long-poll for work, report, deregister; anyone in
the namespace reads the claims on a provider."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ...models import Token, Worker
from .. import store
from ..access import scopes
from ..deps import Access, SessionRoute, get_session, require_namespace
from ..errors import ApiError
from ..fleet import claimsread
from ..fleet.shedding import restarting
from ..fleet.wakeup import Wakeup
from ..identity.roots import root_token_id
from ..runtime import heartbeats_of, owners_of, queue_hints_of
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

router = APIRouter(route_class=SessionRoute, prefix="/api/namespaces/{ns}")

POLL_RECHECK_SECONDS = 15.0
"""A waiting poll re-reads the database this often even without a wake-up (a
safety net; wake-ups come from ``Notifier``)."""
JITTER_FROM_SECONDS = 5.0
JITTER_SHARE = 0.1


def poll_deadline(wait: float) -> float:
    """When an idle long-poll answers 204: after ``wait``; a wait of 5 s or more ends
    up to 10 % sooner, at random. Daemons poll back to back with one fixed wait, so
    daemons that started together (a server restart reconnects a whole fleet within
    a second) would otherwise arrive together for good, every wait, as one burst."""
    if wait >= JITTER_FROM_SECONDS:
        wait -= random.uniform(0.0, JITTER_SHARE * wait)
    return time.monotonic() + wait


def _unknown_worker(worker_id: str) -> ApiError:
    return ApiError(
        404, "not_found", f"no registered worker {worker_id!r} (register again: POST .../workers)"
    )


def _not_yours(what: str) -> ApiError:
    return ApiError(
        403,
        "forbidden",
        f"this daemon token works for its own provider (and instance) only, not {what}",
    )


def _own(access: Access, row: Worker, app: Any = None) -> Worker:
    """``row`` when the caller may act for it (403 for another provider's worker)."""
    c = access.caller
    if app is not None:
        owners_of(app)[row.id] = (row.provider_name, row.instance_id)
    if not scopes.worker_allowed(
        c.scope, c.provider, c.instance, row.provider_name, row.instance_id
    ):
        raise _not_yours(f"worker {row.id!r} of provider {row.provider_name!r}")
    return row


def _owned_known(app: Any, access: Access, worker_id: str) -> bool:
    """Whether the caller is known (without a look-up) to own ``worker_id``."""
    c = access.caller
    if c.scope != "daemon":
        return True
    known = owners_of(app).get(worker_id)
    return known is not None and scopes.worker_allowed(
        c.scope, c.provider, c.instance, known[0], known[1]
    )


def _token_in_force(session: Session, access: Access) -> None:
    """401 when the caller's token has ended (expired, revoked, removed) since the
    request passed the gate: a poll held across that moment claims nothing."""
    from ...db import utcnow

    c = access.caller
    row = None if c.expired() else session.get(Token, c.token_id)
    if row is None or row.revoked_at is not None:
        raise ApiError(401, "unauthorized", "the token was revoked or expired during the poll")
    if row.expires_at is not None and utcnow() >= row.expires_at:
        raise ApiError(401, "unauthorized", "the token was revoked or expired during the poll")


def _worker(session: Session, access: Access, worker_id: str) -> Worker:
    row = store.find_worker(session, access.namespace.id, worker_id)
    if row is None:
        raise _unknown_worker(worker_id)
    return _own(access, row)


def _pin_instance(request: Request, session: Session, access: Access, body: WorkerIn) -> None:
    """A daemon's token registers its own provider only; an instance's token (minted
    to pin itself) is bound to the first instance it registers, and only that one
    from then on."""
    c = access.caller
    if c.scope != "daemon":
        return
    if c.provider != body.provider_name:
        raise _not_yours(f"provider {body.provider_name!r}")
    if c.instance is None:
        return
    row = session.get(Token, c.token_id)
    if row is None:
        raise ApiError(401, "unauthorized", "unknown or revoked token")
    if row.instance_id == "":
        session.execute(
            update(Token)
            .where(Token.id == row.id, Token.instance_id == "")
            .values(instance_id=body.instance_id)
        )
        request.app.state.notifier.publish(session, "forget:tokens")  # the pin, everywhere
        session.commit()
        request.app.state.token_cache.clear()
        session.refresh(row)
    if row.instance_id != body.instance_id:
        raise _not_yours(f"instance {body.instance_id!r}")


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
    _pin_instance(request, session, access, body)
    # a certificate's worker records the token it comes from (an instance's: tracking)
    token_id = access.caller.token_id
    if access.caller.scope == "daemon":
        token_id = root_token_id(session, token_id)
    row, created = store.register(session, access.namespace.id, body, token_id=token_id)
    heartbeats_of(request.app).know(row.id, access.namespace.id, row.provider_name)
    owners_of(request.app)[row.id] = (row.provider_name, row.instance_id)
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
    hb = heartbeats_of(request.app)
    return [store.worker_out(hb.overlay(w), _live(request)) for w in rows]


@router.post("/workers/{worker_id}/heartbeat", response_model=HeartbeatOut)
async def heartbeat(
    worker_id: str, request: Request, access: Access = Depends(require_namespace)
) -> HeartbeatOut:
    """The hottest route: for a worker this server knows, a dict write on the event
    loop (no thread, no connection); the writer stores it with the others."""
    settings = request.app.state.settings
    hb = heartbeats_of(request.app)
    ns_id = access.namespace.id
    known = _owned_known(request.app, access, worker_id)
    seen = hb.beat_known(ns_id, worker_id) if known else None
    if seen is None:

        def lookup() -> Worker | None:
            with request.app.state.sessionmaker() as session:
                row = store.find_worker(session, ns_id, worker_id)
                if row is not None:
                    session.expunge(row)
                return row

        found = await run_in_threadpool(lookup)
        if found is None:
            raise _unknown_worker(worker_id)
        _own(access, found, request.app)
        hb.know(worker_id, ns_id, found.provider_name)
        seen = hb.beat_known(ns_id, worker_id)
        assert seen is not None
    return HeartbeatOut(
        worker_id=worker_id,
        last_seen=seen,
        heartbeat_seconds=settings.heartbeat_seconds,
        live_seconds=settings.live_seconds,
    )


@router.delete("/workers/{worker_id}", status_code=204)
def deregister_worker(
    worker_id: str,
    request: Request,
    access: Access = Depends(require_namespace),
    session: Session = Depends(get_session),
) -> Response:
    row = _worker(session, access, worker_id)
    notifier = request.app.state.notifier
    notifier.publish(session, f"forget:worker:{worker_id}")
    store.deregister(session, row)
    heartbeats_of(request.app).forget(worker_id)
    notifier.fire(f"forget:worker:{worker_id}")
    return Response(status_code=204)


@router.get("/workers/{worker_id}/work", response_model=WorkOut)
async def poll_work(
    worker_id: str,
    request: Request,
    wait: float = Query(0.0, ge=0, le=MAX_WAIT_SECONDS),
    access: Access = Depends(require_namespace),
) -> WorkOut | Response:
    """Long-poll: the oldest queued item for this worker's provider and queues, or
    204 after ``wait`` seconds. Starting a poll counts as a heartbeat. While it
    waits the poll holds no thread and no connection: it sleeps on the provider's
    wake-up event (fired by a submit on any replica)."""
    make_session = request.app.state.sessionmaker
    notifier = request.app.state.notifier
    hb = heartbeats_of(request.app)
    hints = queue_hints_of(request.app)
    live = _live(request)
    ns_id = access.namespace.id
    deadline = poll_deadline(wait)

    def attempt() -> tuple[str, WorkOut | None, bool]:
        """(provider, claimed item, whether nothing at all is queued for the provider
        now: after a claim too, so the provider's next poll need not look)"""
        with make_session() as session:
            row = store.find_worker(session, ns_id, worker_id)
            if row is None:
                raise _unknown_worker(worker_id)
            _own(access, row, request.app)
            _token_in_force(session, access)  # an item goes only to a token in force
            item = store.try_claim(session, row)
            out = None if item is None else store.work_out(session, item, live)
            return row.provider_name, out, not store.any_queued(session, ns_id, row.provider_name)

    # asking for work is a sign of life and makes the worker active (a daemon's
    # token: once the database has said the worker is its own); while the poll is
    # held it keeps beating (Heartbeats.hold), until it ends or the daemon goes
    known = _owned_known(request.app, access, worker_id)
    polled = known and hb.beat_known(ns_id, worker_id, polled=True) is not None
    provider = hb.provider_of(worker_id) if polled else None
    held = False
    gone: asyncio.Future[None] | None = None
    draining: Wakeup | None = getattr(request.app.state, "draining", None)
    try:
        while True:
            if provider is None:  # the first pass: learn the worker's provider
                provider, out, _ = await run_in_threadpool(attempt)
                if not polled:
                    hb.know(worker_id, ns_id, provider)
                    polled = hb.beat_known(ns_id, worker_id, polled=True) is not None
                if out is not None:
                    return out
            key = f"work:{ns_id}:{provider}"
            event = notifier.event(key)  # taken before the look: a submit after it wakes us
            if not hints.known_empty(key):
                async with hints.turn(key):  # the provider's polls look one at a time
                    if not hints.known_empty(key) and not (gone is not None and gone.done()):
                        generation = hints.generation(key)
                        _, out, empty = await run_in_threadpool(attempt)
                        if empty:
                            hints.mark_empty(key, generation)
                        if out is not None:
                            return out
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (gone is not None and gone.done()):
                return Response(status_code=204)
            if draining is not None and draining.is_set():
                if (metrics := getattr(request.app.state, "metrics", None)) is not None:
                    metrics.shed("draining")
                status, headers, body = restarting(request.app.state.settings.retry_after_seconds)
                return Response(body, status, {k.decode(): v.decode() for k, v in headers})
            if gone is None:
                gone = asyncio.ensure_future(_disconnected(request))
            if polled and not held:
                hb.hold(worker_id)
                held = True
            try:
                await notifier.wait(
                    event, min(remaining, POLL_RECHECK_SECONDS), until=draining, gone=gone
                )
            except asyncio.CancelledError:  # the server is shutting down: no work, not a 500
                return Response(status_code=204)
    finally:
        if held:
            hb.release(worker_id)
        if gone is not None:
            gone.cancel()


async def _disconnected(request: Request) -> None:
    """Returns once the client of ``request`` (a GET, whose body is empty) has gone."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


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
    notifier = request.app.state.notifier
    notifier.publish(session, f"done:{work_id}")
    store.touch(session, row)
    store.report(session, item, body)
    notifier.fire(f"done:{work_id}")
    return store.work_out(session, item, _live(request))


@router.get("/providers/{name}/claims", response_model=Claims)
async def provider_claims(
    name: str,
    request: Request,
    identity: str | None = None,
    access: Access = Depends(require_namespace),
) -> Response:
    """Who claims provider ``name``. Zero live workers is a normal answer. With
    ``identity``, only the workers of that provider identity (see store.counts_for).

    Read by every ``provider status``: on the event loop where it can be (see
    ``claimsread``), serialized there too."""
    out = await claimsread.read(
        request.app,
        heartbeats_of(request.app),
        access.namespace.id,
        name,
        _live(request),
        identity or None,
    )
    return Response(out.model_dump_json(by_alias=True).encode(), media_type="application/json")


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
    hb = heartbeats_of(request.app)
    return ClaimsMany(
        claims=store.claims_many(
            session, access.namespace.id, wanted, _live(request), overlay=hb.overlay
        )
    )
