"""The launch service: merge (the registry's), mint one token per instance (over
TLS a one-use bootstrap token, see tokens.py), call the launcher, remember what was
launched; list it with live state; terminate it and revoke its token (and the
certificates its daemon got with it).

Idempotent under retry: every launch request has a client token (the caller's, or
one made up here and returned). A request already done answers with what it
answered the first time; one left pending (a timed-out call) is sent again with the
same per-instance client tokens and the same instance tokens, which the clouds
deduplicate (EC2's ``ClientToken``) or the launcher recognises (a Pod, a SLURM job
or an SSH daemon with the same name).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..db import utcnow
from ..launchers.errors import LaunchRejected
from ..launchers.order import Bootstrap
from ..registry import service as registry
from ..registry.crypto import SecretBox, require_current
from ..registry.launch import scrub
from ..registry.merge import LaunchSpec
from . import bundle, dispatch, serving_ca, tracking
from .instances import (
    fail_instance,
    instance_wire,
    list_instances,
    refresh,
    rows_for,
    stop_instance,
    stop_orphan,
    terminate,
)
from .models import Instance, LaunchRequest
from .orders import (
    LaunchError,
    _half,
    _identity,
    _launch_fn,
    backend,
    server_credentials,
    split_body,
    to_order,
)
from .tokens import _mint, renew, revoke, signs_certificates

log = logging.getLogger("lakeshore.launch")

LAUNCHING = "launching"
IN_PROGRESS = "in_progress"
"""The error code of a retry that arrives while its first request is being launched."""
IN_FLIGHT_SECONDS = 900.0
"""How long a request with the launcher makes a retry of its client token wait (the
CLI's own wait); past it, a request whose server died with it may be retried."""


def _busy(session: Session, ns_id: int, provider: str, how: str, hybrid: bool) -> tuple[str, ...]:
    """The provider's live instances a launch must not double up on (on a hybrid
    provider, those of the same half: a direct run and the daemon share a host)."""
    rows = rows_for(session, ns_id, provider=provider)
    if hybrid:
        rows = [r for r in rows if (r.details or {}).get("dispatch", how) == how]
    return tuple(r.instance_id for r in rows)


# -- launching ----------------------------------------------------------------------


def _validate(
    session: Session,
    scope: registry.Scope,
    box: SecretBox,
    state: Any,
    core: Mapping[str, Any],
    own: Mapping[str, Any],
    kind: str,
) -> None:
    """The launcher's offline checks (``validate(order)``), before a token is minted
    or the daemon bundle built: a launch that cannot go is refused at once."""
    if kind in (getattr(state, "registry_launchers", None) or {}):
        return
    check = getattr(backend(state, kind), "validate", None)
    if check is None:
        return
    plaintexts: list[str] = []
    resolved = registry.resolve_launch(session, scope, box, core, plaintexts=plaintexts)
    how = own.get("dispatch") or resolved.dispatch
    if resolved.dispatch == dispatch.HYBRID:
        how = own.get("dispatch") or dispatch.DIRECT
    try:
        run = dict(resolved.run)
        if own.get("command"):
            run["command"] = own["command"]
        check(
            to_order(
                resolved,
                run=run,
                count=own["count"],
                client_token=own["clientToken"],
                queue=own.get("queue"),
                dispatch=how,
                busy=_busy(
                    session, scope.namespace.id, resolved.provider, how, resolved.dispatch != how
                ),
                server_credentials=server_credentials(state),
            )
        )
    except LaunchRejected as exc:
        raise LaunchError(
            exc.status, exc.code, scrub(f"the {kind} launch was refused: {exc}", plaintexts)
        ) from None
    finally:
        del resolved


def limit_room(
    session: Session, scope: registry.Scope, state: Any, provider: str, how: str, reserved: int = 0
) -> int | None:
    """Units of ``provider``'s instance limit (``kwargs.capacity.limit``, an SSH pool's
    host count) still free for a launch dispatched ``how``, counted as ``lakeshore
    capacity`` counts them (launched instances and live workers); ``reserved`` units
    already held for this launch (a lease's slot) are not counted twice. None: no
    limit applies (none is set; or a direct run on an SSH pool's host, which the
    host's own room bounds)."""
    from ..capacity.service import snapshot, units

    hb = getattr(state, "heartbeats", None)
    live = float(state.settings.live_seconds)
    view = snapshot(
        session, scope, live, hb.overlay if hb else None, only=[provider]
    ).providers.get(provider)
    if view is None or view.limit is None:
        return None
    held = view.instances
    if view.launcher == "SSH":
        if how != dispatch.DAEMON:
            return None
        # a host is one unit: one whose only runs are direct gets the daemon at no cost
        mine = rows_for(session, scope.namespace.id, provider=provider)
        daemons = [r for r in mine if (r.details or {}).get("dispatch") != dispatch.DIRECT]
        held -= units("SSH", mine, view.live) - units("SSH", daemons, view.live)
    return max(0, view.limit - max(0, held - reserved))


def _within_limit(
    session: Session,
    scope: registry.Scope,
    state: Any,
    preview: Mapping[str, Any],
    count: int,
    reserved: int,
) -> None:
    """Refuse a launch that would take the provider past its instance limit."""
    name = preview["provider"]
    room = limit_room(session, scope, state, name, preview["dispatch"], reserved)
    if room is not None and count > room:
        raise LaunchError(
            409,
            "limit_reached",
            f"provider {name!r} is at its instance limit: room for {room} more unit(s) and "
            f"this launch asks for {count} (launched instances and live workers each hold "
            "one); terminate one (lakeshore instances terminate ID) or raise "
            "kwargs.capacity.limit (lakeshore capacity shows what holds them)",
        )


def launch(
    session: Session,
    scope: registry.Scope,
    box: SecretBox,
    body: Mapping[str, Any],
    *,
    state: Any,
    server_url: str,
    data_dir: Path,
    reserved: int = 0,
) -> dict[str, Any]:
    """Launch what ``body`` asks for. ``reserved``: units of the provider's limit
    already held for this launch (a lease's slot), not counted twice. Each launch's
    outcome is counted in ``lakeshore_launches_total`` (server/metrics/)."""
    from ..server.metrics.registry import LaunchTally

    tally = LaunchTally(state)
    try:
        out = _launch(session, scope, box, body, state, server_url, data_dir, reserved, tally)
    except BaseException as exc:
        tally.ended(exc)
        raise
    tally.replayed = bool(out.get("replayed"))
    tally.ended(None)
    return out


def _launch(
    session: Session,
    scope: registry.Scope,
    box: SecretBox,
    body: Mapping[str, Any],
    state: Any,
    server_url: str,
    data_dir: Path,
    reserved: int,
    tally: Any,
) -> dict[str, Any]:
    core, own = split_body(body)
    preview = registry.preview_launch(session, scope, core)
    tally.launcher = preview["launcher"]
    hybrid = preview["dispatch"] == dispatch.HYBRID
    _half(preview, own)
    ns_id = scope.namespace.id
    ct = own["clientToken"]
    req = session.scalar(
        select(LaunchRequest).where(
            LaunchRequest.namespace_id == ns_id, LaunchRequest.client_token == ct
        )
    )
    if req is not None and req.state == "done" and req.result:
        out = dict(req.result.get("response") or {})
        out["replayed"] = True
        return out
    if (
        req is not None
        and req.state == LAUNCHING
        and utcnow() - req.updated_at < timedelta(seconds=IN_FLIGHT_SECONDS)
    ):
        # The first request is still with the launcher: launching again could start the
        # same instances twice (an SSH host, a SLURM job); once it is done, a retry gets
        # its answer.
        raise LaunchError(
            409,
            IN_PROGRESS,
            f"a launch with client token {ct!r} is under way; retry with the same token "
            "in a while: once it has finished, the retry answers its result",
        )
    if req is not None and req.provider_name != preview["provider"]:
        raise LaunchError(
            409, "conflict", f"client token {ct!r} was used for provider {req.provider_name!r}"
        )
    fn = _launch_fn(state, preview["launcher"])
    spec_preview = LaunchSpec(
        provider=preview["provider"],
        namespace=preview["namespace"],
        launcher=preview["launcher"],
        dispatch=preview["dispatch"],
        kwargs={},
        tags=preview["tags"],
    )

    _validate(session, scope, box, state, core, own, preview["launcher"])
    if req is None:  # a retry relaunches what its first try counted
        _within_limit(session, scope, state, preview, own["count"], reserved)

    # The request row and the instance tokens first, so a retry reuses both.
    tokens: list[str] = []
    token_ids: list[int] = []
    if req is None:
        req = LaunchRequest(
            namespace_id=ns_id,
            client_token=ct,
            provider_name=preview["provider"],
            launcher=preview["launcher"],
            state="pending",
        )
        sealed: list[str] = []
        if dispatch.leaves_daemon(spec_preview):
            require_current(session, box)  # a key rotated meanwhile: refused, nothing kept
            # over TLS a one-use bootstrap token, spent on the daemon's certificate
            boot_token = signs_certificates(state)
            for i in range(own["count"]):
                label = f"{tracking.INSTANCE_TOKEN}{preview['provider']} {ct}-{i}"
                tok, tid = _mint(session, ns_id, label, preview["provider"], bootstrap=boot_token)
                tokens.append(tok)
                token_ids.append(tid)
                sealed.append(box.encrypt(tok, namespace=str(ns_id), name=f"launch:{ct}:{i}"))
        req.result = {"sealedTokens": sealed, "tokenIds": token_ids}
        session.add(req)
        try:
            session.commit()
        except IntegrityError:
            session.rollback()
            raise LaunchError(
                409, IN_PROGRESS, f"a launch with client token {ct!r} is already under way; retry"
            ) from None
    else:
        stored = req.result or {}
        token_ids = list(stored.get("tokenIds") or [])
        tokens = [
            box.decrypt(s, namespace=str(ns_id), name=f"launch:{ct}:{i}")
            for i, s in enumerate(stored.get("sealedTokens") or [])
        ]
        renew(session, token_ids, state)  # handed again: the bootstrap tokens live on
        session.commit()
    boot: Bootstrap | None = None
    if tokens:
        sha, kind = "", "wheels"
        if dispatch.needs_bundle(spec_preview):
            try:
                found = bundle.current(state, data_dir)
            except Exception as exc:
                raise LaunchError(
                    503, "unavailable", f"could not build the daemon bundle: {exc}"
                ) from None
            sha, kind = found.sha256, found.kind
        try:
            ca_pem = serving_ca.for_launch(state)  # what the daemon verifies an https server with
        except serving_ca.ServingCaError as exc:
            raise LaunchError(503, "unavailable", str(exc)) from None
        boot = Bootstrap(
            server=server_url,
            daemon_sha256=sha,
            daemon_kind=kind,
            tokens=tuple(tokens),
            queues=(own["queue"],) if own["queue"] else (),
            ca_pem=ca_pem,
        )

    plaintexts: list[str] = list(tokens)
    resolved = registry.resolve_launch(session, scope, box, core, plaintexts=plaintexts)
    run = dict(resolved.run)
    if own["command"]:
        run["command"] = own["command"]
    order = to_order(
        resolved,
        run=run,
        count=own["count"],
        client_token=ct,
        queue=own["queue"],
        bootstrap=boot,
        dispatch=preview["dispatch"],
        busy=_busy(session, ns_id, preview["provider"], preview["dispatch"], hybrid),
        identity=_identity(session, scope, preview["provider"]),
        server_credentials=server_credentials(state),
    )
    req.state = LAUNCHING  # a retry meanwhile waits instead of launching again
    session.commit()  # and the connection goes back while the cloud works
    try:
        raw = dict(fn(order))
    except LaunchRejected as exc:
        # refused outright: nothing was launched, so the request and its tokens go
        _forget(session, req, token_ids, state)
        raise LaunchError(
            exc.status,
            exc.code,
            scrub(f"the {order.launcher} launch was refused: {exc}", plaintexts),
        ) from None
    except LaunchError:
        raise
    except Exception as exc:
        _retryable(session, req)
        message = scrub(f"{type(exc).__name__}: {exc}", plaintexts)
        log.warning("the %s launcher failed: %s", order.launcher, message)
        raise LaunchError(
            502, "launch_failed", f"the {order.launcher} launcher failed: {message}"
        ) from None
    finally:
        del resolved, order
    result = scrub(raw, plaintexts)
    rows = _record(session, ns_id, req, result, token_ids, own["queue"], preview["dispatch"])
    response = dict(preview)
    response.pop("serverLaunch", None)
    response["clientToken"] = ct
    response["count"] = own["count"]
    response["instances"] = [instance_wire(r, preview["namespace"]) for r in rows]
    response["result"] = result
    req.state = "done"
    req.result = {"response": response, "tokenIds": token_ids}
    session.commit()
    return response


def _retryable(session: Session, req: LaunchRequest) -> None:
    """A launcher that failed half-way: a retry with the same token may go again (the
    launcher's own client token keeps it from starting twice what did start)."""
    session.rollback()
    row = session.get(LaunchRequest, req.id)
    if row is not None and row.state == LAUNCHING:
        row.state = "pending"
        session.commit()


def _forget(session: Session, req: LaunchRequest, token_ids: Sequence[int], state: Any) -> None:
    session.rollback()
    for tid in token_ids:
        revoke(session, tid, state)
    row = session.get(LaunchRequest, req.id)
    if row is not None:
        session.delete(row)
    session.commit()


def _record(
    session: Session,
    ns_id: int,
    req: LaunchRequest,
    result: Mapping[str, Any],
    token_ids: Sequence[int],
    queue: str | None,
    how: str,
) -> list[Instance]:
    """One row per launched instance. A retry of the same request finds the rows it
    recorded; a host or id reused after its instance was terminated gets a new row
    (the terminated one is history, never the answer)."""
    rows: list[Instance] = []
    for n, item in enumerate(result.get("instances") or []):
        if isinstance(item, str):
            item = {"id": item}
        if not isinstance(item, Mapping) or not item.get("id"):
            continue
        iid = str(item["id"])
        index = item.get("index", n)
        row = session.scalar(
            select(Instance).where(
                Instance.namespace_id == ns_id,
                Instance.provider_name == req.provider_name,
                Instance.instance_id == iid,
                Instance.terminated_at.is_(None),
            )
        )
        if row is None:
            now = utcnow()
            row = Instance(
                namespace_id=ns_id,
                provider_name=req.provider_name,
                launcher=req.launcher,
                instance_id=iid,
                client_token=req.client_token,
                queue=queue,
                state=str(item.get("state") or "pending"),
                token_id=token_ids[index]
                if isinstance(index, int) and index < len(token_ids)
                else None,
                details={
                    "dispatch": how,
                    **{k: v for k, v in item.items() if k not in ("id", "state")},
                },
                created_at=now,
                started_at=now,
            )
            session.add(row)
        rows.append(row)
    session.flush()
    return rows


# what callers reach through this module (the launch service's one door)
__all__ = [
    "LaunchError",
    "backend",
    "fail_instance",
    "instance_wire",
    "launch",
    "limit_room",
    "list_instances",
    "refresh",
    "rows_for",
    "stop_instance",
    "stop_orphan",
    "terminate",
]
