"""The launch service: merge (the registry's), mint one token per instance, call the
launcher, remember what was launched; list it with live state; terminate it and
revoke its token.

Idempotent under retry: every launch request has a client token (the caller's, or
one made up here and returned). A request already done answers with what it
answered the first time; one left pending (a timed-out call) is sent again with the
same per-instance client tokens and the same instance tokens, which the clouds
deduplicate (EC2's ``ClientToken``) or the launcher recognises (a Pod, a SLURM job
or an SSH daemon with the same name).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..db import utcnow
from ..launchers import LauncherUnavailable, load
from ..launchers.errors import LaunchRejected
from ..launchers.order import Bootstrap, LaunchOrder
from ..models import Token
from ..names import is_name
from ..registry import service as registry
from ..registry.crypto import SecretBox, require_current
from ..registry.launch import scrub
from ..registry.merge import LaunchSpec
from ..server.access.tokens import hash_token, new_token
from ..server.json_guard import refuse_nul
from . import bundle, dispatch, tracking
from .models import Instance, LaunchRequest

log = logging.getLogger("lakeshore.launch")

CLIENT_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,48}$")
MAX_COUNT = 20
LAUNCHING = "launching"
IN_PROGRESS = "in_progress"
"""The error code of a retry that arrives while its first request is being launched."""
IN_FLIGHT_SECONDS = 900.0
"""How long a request with the launcher makes a retry of its client token wait (the
CLI's own wait); past it, a request whose server died with it may be retried."""
ORDER_FIELDS = ("count", "clientToken", "queue", "command", "dispatch")
GONE = ("terminated", "gone", "cancelled", "completed", "failed", "deleted", "succeeded", "timeout")


class LaunchError(registry.RegistryError):
    pass


def _bad(detail: str) -> LaunchError:
    return LaunchError(422, "validation_error", detail)


def split_body(body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(the registry's preview body, this request's own fields)``, checked before
    anything is stored: no NUL anywhere (PostgreSQL cannot hold it), a queue name that
    fits its column (else the instances launched could not be recorded)."""
    try:
        refuse_nul(body)
    except ValueError as exc:
        raise _bad(str(exc)) from None
    core = {k: v for k, v in body.items() if k not in ORDER_FIELDS}
    own = {k: body[k] for k in ORDER_FIELDS if k in body}
    count = own.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_COUNT:
        raise _bad(f"count must be a whole number from 1 to {MAX_COUNT}")
    token = own.get("clientToken")
    if token is None:
        token = uuid.uuid4().hex
    if not isinstance(token, str) or not CLIENT_TOKEN.match(token):
        raise _bad("clientToken must be 1-48 characters of A-Z a-z 0-9 _ -")
    queue = own.get("queue")
    if queue is not None and (not isinstance(queue, str) or not is_name(queue)):
        raise _bad("queue must be a queue name (^[a-z0-9][a-z0-9-]*$, at most 63 characters)")
    command = own.get("command")
    if command is not None and not isinstance(command, str):
        raise _bad("command must be a shell command (a string)")
    how = own.get("dispatch")
    if how is not None and how not in (dispatch.DIRECT, dispatch.DAEMON):
        raise _bad("dispatch (for a hybrid provider's launch) must be direct or daemon")
    return core, {
        "count": count,
        "clientToken": token,
        "queue": queue,
        "command": command,
        "dispatch": how,
    }


def _half(preview: dict[str, Any], own: Mapping[str, Any]) -> None:
    """A hybrid provider's launch is direct or daemon (the request's ``dispatch``,
    direct when it names none); another provider's launch cannot pick."""
    how = own.get("dispatch")
    if preview["dispatch"] == dispatch.HYBRID:
        preview["dispatch"] = how or dispatch.DIRECT
    elif how is not None and how != preview["dispatch"]:
        raise _bad(
            f"provider {preview['provider']!r} dispatches {preview['dispatch']!r}; "
            "only a hybrid provider's launch picks direct or daemon"
        )


def _busy(session: Session, ns_id: int, provider: str, how: str, hybrid: bool) -> tuple[str, ...]:
    """The provider's live instances a launch must not double up on (on a hybrid
    provider, those of the same half: a direct run and the daemon share a host)."""
    rows = rows_for(session, ns_id, provider=provider)
    if hybrid:
        rows = [r for r in rows if (r.details or {}).get("dispatch", how) == how]
    return tuple(r.instance_id for r in rows)


# -- which function launches ------------------------------------------------------


def backend(state: Any, kind: str) -> Any:
    """The launcher module for ``kind`` (overridable per app for tests:
    ``app.state.launch_backends = {"EC2": module-like}``)."""
    overrides = getattr(state, "launch_backends", None) or {}
    if kind in overrides:
        return overrides[kind]
    try:
        return load(kind)
    except LauncherUnavailable as exc:
        raise LaunchError(501, "not_implemented", f"{exc}; nothing was launched") from None


def _launch_fn(state: Any, kind: str) -> Callable[[LaunchSpec], Mapping[str, Any]]:
    seam = getattr(state, "registry_launchers", None) or {}
    if kind in seam:
        return seam[kind]  # type: ignore[no-any-return]
    return backend(state, kind).launch  # type: ignore[no-any-return]


# -- tokens -----------------------------------------------------------------------


def _mint(session: Session, namespace_id: int, label: str, provider: str) -> tuple[str, int]:
    """An instance's token: a daemon token for ``provider``, pinned to the first
    instance that registers with it (``instance_id=""``; see server/scopes.py)."""
    token = new_token()
    row = Token(
        token_hash=hash_token(token),
        namespace_id=namespace_id,
        admin=False,
        label=label,
        scope="daemon",
        provider_name=provider,
        instance_id="",
    )
    session.add(row)
    session.flush()
    return token, row.id


def revoke(session: Session, token_id: int | None, state: Any) -> None:
    """Revoke an instance's token when ``session`` commits, and make every replica
    forget it then (``forget:tokens``), as the tokens route does: a cached token
    would otherwise stay good for up to a minute after its instance is gone."""
    if token_id is None:
        return
    row = session.get(Token, token_id)
    if row is not None and row.revoked_at is None:
        row.revoked_at = utcnow()
        notifier = getattr(state, "notifier", None)
        if notifier is not None:
            notifier.publish(session, "forget:tokens")
        cache = getattr(state, "token_cache", None)
        if cache is not None:
            event.listen(session, "after_commit", lambda _s: cache.clear(), once=True)


# -- launching ----------------------------------------------------------------------


def to_order(spec: LaunchSpec, **extra: Any) -> LaunchOrder:
    base = {f.name: getattr(spec, f.name) for f in fields(LaunchSpec)}
    base.update(extra)
    return LaunchOrder(**base)


def server_credentials(state: Any) -> bool:
    """Whether the operator lets a launch with no credentials secret use the server's
    own cloud credentials (``Settings.launch_server_credentials``; off by default)."""
    return bool(getattr(getattr(state, "settings", None), "launch_server_credentials", False))


def _identity(session: Session, scope: registry.Scope, provider: str) -> str | None:
    """The provider row's identity (what names its daemons on a host), if it has one."""
    return registry.get_provider_row(session, scope, provider).identity


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
    already held for this launch (a lease's slot), not counted twice."""
    core, own = split_body(body)
    preview = registry.preview_launch(session, scope, core)
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
            for i in range(own["count"]):
                label = f"{tracking.INSTANCE_TOKEN}{preview['provider']} {ct}-{i}"
                tok, tid = _mint(session, ns_id, label, preview["provider"])
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
        boot = Bootstrap(
            server=server_url,
            daemon_sha256=sha,
            daemon_kind=kind,
            tokens=tuple(tokens),
            queues=(own["queue"],) if own["queue"] else (),
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


# -- listing and terminating -------------------------------------------------------------


def _iso(dt: datetime | None) -> str | None:
    return dt.isoformat().replace("+00:00", "Z") if dt else None


def instance_wire(row: Instance, namespace: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row.instance_id,
        "provider": row.provider_name,
        "launcher": row.launcher,
        "namespace": namespace,
        "state": row.state,
        "queue": row.queue,
        "clientToken": row.client_token,
        "details": row.details or {},
        "createdAt": _iso(row.created_at),
        "startedAt": _iso(row.started_at or row.created_at),
        "terminatedAt": _iso(row.terminated_at),
    }
    reason = (row.details or {}).get("reason")
    if reason:
        out["reason"] = reason
    return out


def _order_for(
    session: Session,
    scope: registry.Scope,
    box: SecretBox,
    provider: str,
    plaintexts: list[str],
    state: Any = None,
) -> LaunchOrder:
    resolved = registry.resolve_launch(
        session, scope, box, {"provider": provider}, plaintexts=plaintexts
    )
    return to_order(
        resolved,
        identity=_identity(session, scope, provider),
        server_credentials=server_credentials(state),
    )


def rows_for(
    session: Session,
    ns_id: int,
    *,
    provider: str | None = None,
    include_gone: bool = False,
    queue: str | None = None,
) -> list[Instance]:
    q = select(Instance).where(Instance.namespace_id == ns_id)
    if provider:
        q = q.where(Instance.provider_name == provider)
    if queue:
        q = q.where(Instance.queue == queue)
    if not include_gone:
        q = q.where(Instance.terminated_at.is_(None))
    return list(session.scalars(q.order_by(Instance.id)))


def refresh(
    session: Session, scope: registry.Scope, box: SecretBox, state: Any, rows: Sequence[Instance]
) -> dict[str, str]:
    """Ask each provider for the live state of its instances; update the rows.
    Returns ``{provider: error}`` for providers that could not be asked."""
    errors: dict[str, str] = {}
    by_provider: dict[str, list[Instance]] = {}
    for r in rows:
        if r.terminated_at is None:
            by_provider.setdefault(r.provider_name, []).append(r)
    for provider, group in by_provider.items():
        plaintexts: list[str] = []
        try:
            order = _order_for(session, scope, box, provider, plaintexts, state)
            session.commit()  # no connection held while the provider is asked
            live = backend(state, order.launcher).describe(order, [r.instance_id for r in group])
        except Exception as exc:
            detail = exc.detail if isinstance(exc, registry.RegistryError) else str(exc)
            errors[provider] = str(scrub(detail, plaintexts))
            continue
        for r in group:
            session.refresh(r)  # what changed while the provider was asked wins
            if r.terminated_at is not None:
                continue
            seen = live.get(r.instance_id, "gone")
            if isinstance(seen, Mapping):  # a state and the outcome of a direct run
                outcome = {k: v for k, v in seen.items() if k != "state"}
                seen = str(seen.get("state") or "unknown")
                if outcome and (r.details or {}).get("outcome") != outcome:
                    r.details = {**(r.details or {}), "outcome": scrub(outcome, plaintexts)}
            if seen != r.state:
                r.state = seen
            if seen.lower() in GONE and r.terminated_at is None:
                _ended(session, state, r, f"the instance is {seen}")
    session.commit()
    return errors


def _ended(session: Session, state: Any, row: Instance, reason: str) -> None:
    """``row`` is over: terminated now, its token revoked, its workers out of the
    count at once."""
    row.terminated_at = utcnow()
    revoke(session, row.token_id, state)
    tracking.take_out(session, state, row, f"{reason}; the run was lost")


def list_instances(
    session: Session,
    scope: registry.Scope,
    box: SecretBox,
    state: Any,
    *,
    provider: str | None = None,
    include_gone: bool = False,
    live: bool = True,
) -> dict[str, Any]:
    """The instances, and the orphans: live workers whose instance row is terminated
    or missing (listed with ``state: orphan`` until they are gone)."""
    rows = rows_for(session, scope.namespace.id, provider=provider, include_gone=include_gone)
    errors = refresh(session, scope, box, state, rows) if live else {}
    if not include_gone:
        rows = [r for r in rows if r.terminated_at is None]
    ns = scope.namespace.name
    workers = tracking.live_workers(session, state, scope.namespace.id, provider)
    lost = tracking.orphans(session, state, scope.namespace.id, workers)
    return {
        "instances": [instance_wire(r, ns) for r in rows] + [o.wire(ns) for o in lost],
        "errors": errors,
    }


def find(session: Session, ns_id: int, instance_id: str) -> Instance:
    row = session.scalar(  # the live row first, else the latest
        select(Instance)
        .where(Instance.namespace_id == ns_id, Instance.instance_id == instance_id)
        .order_by(Instance.terminated_at.is_(None).desc(), Instance.id.desc())
    )
    if row is None:
        raise LaunchError(
            404, "not_found", f"this control plane launched no instance {instance_id!r}"
        )
    return row


def stop_instance(
    session: Session,
    scope: registry.Scope,
    box: SecretBox,
    state: Any,
    row: Instance,
    *,
    action: str = "terminate",
) -> dict[str, Any]:
    """Terminate (or suspend) one instance through its launcher; a terminated
    instance's token is revoked."""
    session.refresh(row)  # another request or replica may have ended it meanwhile
    if row.terminated_at is not None:
        return instance_wire(row, scope.namespace.name)
    plaintexts: list[str] = []
    try:
        order = _order_for(session, scope, box, row.provider_name, plaintexts, state)
        module = backend(state, order.launcher)
        fn = getattr(module, action, None)
        if fn is None:
            raise LaunchError(422, "unsupported", f"{order.launcher} cannot {action} instances")
        if action == "resume":  # only a daemon registering after this start counts
            tracking.forget_start(session, state, row)
        session.commit()  # no connection held while the launcher works
        fn(order, [row.instance_id])
    except LaunchRejected as exc:
        raise LaunchError(exc.status, exc.code, str(scrub(str(exc), plaintexts))) from None
    except registry.RegistryError:
        raise
    except Exception as exc:
        message = scrub(f"{type(exc).__name__}: {exc}", plaintexts)
        raise LaunchError(
            502, "launch_failed", f"could not {action} {row.instance_id}: {message}"
        ) from None
    if action == "terminate":
        row.state = "terminated"
        _ended(session, state, row, "the instance was terminated")
    elif action == "suspend":
        row.state = "stopping"
    else:  # resumed: the start timeout counts from now
        row.state = "pending"
        row.started_at = utcnow()
    session.commit()
    return instance_wire(row, scope.namespace.name)


def fail_instance(
    session: Session,
    scope: registry.Scope,
    box: SecretBox,
    state: Any,
    row: Instance,
    reason: str,
) -> dict[str, Any]:
    """Terminate ``row`` through its launcher and record it as ``failed`` with why."""
    stop_instance(session, scope, box, state, row, action="terminate")
    row.state = "failed"
    row.details = {**(row.details or {}), "reason": reason}
    session.commit()
    return instance_wire(row, scope.namespace.name)


def stop_orphan(
    session: Session, scope: registry.Scope, box: SecretBox, state: Any, orphan: Any
) -> None:
    """Tell an orphaned worker to stop: its token is revoked and its daemon is stopped
    through the launcher (the SSH host's supervisor, ``scancel``, the cloud), unless a
    live instance now has its id (a relaunch on the same host is never stopped)."""
    w, row = orphan.worker, orphan.row
    revoke(session, w.token_id, state)
    target = row.instance_id if row is not None else w.instance_id
    launcher = row.launcher if row is not None else None
    session.commit()
    live = session.scalar(
        select(Instance.id).where(
            Instance.namespace_id == w.namespace_id,
            Instance.provider_name == w.provider_name,
            Instance.instance_id.in_({target, w.instance_id}),
            Instance.terminated_at.is_(None),
        )
    )
    if live is not None:
        return
    plaintexts: list[str] = []
    try:
        order = _order_for(session, scope, box, w.provider_name, plaintexts, state)
        session.commit()
        module = backend(state, launcher or order.launcher)
        module.terminate(order, [target])
    except Exception as exc:
        detail = exc.detail if isinstance(exc, registry.RegistryError) else str(exc)
        raise LaunchError(
            502, "launch_failed", f"could not stop orphan {target}: {scrub(detail, plaintexts)}"
        ) from None


def terminate(
    session: Session, scope: registry.Scope, box: SecretBox, state: Any, instance_id: str
) -> dict[str, Any]:
    return stop_instance(session, scope, box, state, find(session, scope.namespace.id, instance_id))
