"""What runs beside the routes for the server's lifetime: the thread pool sized from
``Settings.pool_size``, the coalesced-heartbeat writer, (over PostgreSQL) the
``LISTEN`` thread that carries wake-ups and cache drops between replicas, and the
caches of the fleet, filled at start-up (``fleet/warmup.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from ..registry.crypto import SecretBox
from .access.keys import check_key, key_source, load_key, load_previous
from .fleet import claimsread, gcpolicy, warmup
from .fleet.heartbeats import Heartbeats
from .fleet.queued import QueueHints
from .settings import Settings


def load_secret_box(settings: Settings, make_session: sessionmaker[Session]) -> SecretBox:
    """The shared key, verified against the database's key check (raises
    ``SecretKeyError`` with what to do when it does not match)."""
    box = SecretBox(load_key(settings), load_previous(settings))
    with make_session() as session:
        check_key(session, box, key_source(settings))
    return box


def reload_secret_box(app: Any) -> SecretBox | None:
    """Read the key again from where it came from (after a rotation while this server
    ran) and use it when it is the database's; None when it is not (the key came from
    ``LAKESHORE_SECRET_KEY``, say: a restart with the new key is needed)."""
    import logging

    from ..registry.crypto import SecretKeyError

    log = logging.getLogger("lakeshore.keys")
    try:
        box = load_secret_box(app.state.settings, app.state.sessionmaker)
    except (SecretKeyError, OSError) as exc:
        log.error("the secret key was rotated and the new one could not be loaded: %s", exc)
        return None
    app.state.registry_secret_box = box
    log.warning("the secret key was rotated: reloaded it (key id %s)", box.key_id)
    return box


def reload_if_rotated(app: Any, exc: BaseException) -> None:
    """After a write refused for a stale key (``StaleKeyError``) outside a request
    (the queue loop's launches), read the key again as a refused request does."""
    from ..registry.crypto import StaleKeyError

    if isinstance(exc, StaleKeyError):
        reload_secret_box(app)


def unscoped_listings(settings: Settings, make_session: sessionmaker[Session]) -> bool:
    """Whether a namespace without an org lists every namespace's rows (the spec's
    rule): the setting when given, else what the database recorded at install
    (on for installs that predate the setting, off for new ones)."""
    if settings.unscoped_listings is not None:
        return settings.unscoped_listings
    from ..models import ServerMeta

    with make_session() as session:
        row = session.get(ServerMeta, "unscoped_listings")
    return row is not None and row.value == "true"


def heartbeats_of(app: Any) -> Heartbeats:
    hb: Heartbeats | None = getattr(app.state, "heartbeats", None)
    if hb is None:
        settings = app.state.settings
        hb = Heartbeats(app.state.sessionmaker, settings.flush_seconds, settings.heartbeat_seconds)
        app.state.heartbeats = hb
        notifier = app.state.notifier

        def forget(key: str) -> None:
            if key.startswith("forget:worker:"):
                hb.forget(key.removeprefix("forget:worker:"))

        notifier.on_key(forget)
    return hb


def queue_hints_of(app: Any) -> QueueHints:
    hints: QueueHints | None = getattr(app.state, "queue_hints", None)
    if hints is None:
        hints = app.state.queue_hints = QueueHints()
        app.state.notifier.on_key(hints.on_key)
    return hints


OWNERS_MAX = 200_000


def owners_of(app: Any) -> dict[str, tuple[str, str]]:
    """worker id -> (provider, instance), as the database said: what lets a daemon
    token's heartbeat be checked without a look-up (the hot path reads it too)."""
    owners: dict[str, tuple[str, str]] | None = getattr(app.state, "worker_owners", None)
    if owners is None or len(owners) > OWNERS_MAX:
        owners = app.state.worker_owners = {}
    return owners


def _on_cache_keys(app: Any) -> None:
    def drop(key: str) -> None:
        if key in ("forget:tokens", "forget:all"):
            app.state.token_cache.clear()

    app.state.notifier.on_key(drop)


def add_service(app: Any, start: Callable[[], None], stop: Callable[[], None]) -> None:
    """Something that runs while the server runs (the queue loop): ``start`` once the
    server is up, ``stop`` as it shuts down, in the lifespan below."""
    services: list[tuple[Callable[[], None], Callable[[], None]]] = getattr(
        app.state, "services", []
    )
    services.append((start, stop))
    app.state.services = services


@asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    from anyio import to_thread

    settings: Settings = app.state.settings
    to_thread.current_default_thread_limiter().total_tokens = max(1, settings.pool_size)
    app.state.notifier.bind(asyncio.get_running_loop())
    _on_cache_keys(app)
    queue_hints_of(app)
    hb = heartbeats_of(app)
    hb.start()
    listener = None
    if app.state.engine.dialect.name == "postgresql":
        from .fleet.notify import PgListener

        url = app.state.engine.url.render_as_string(hide_password=False)
        listener = PgListener(url, app.state.notifier)
        await to_thread.run_sync(listener.start)
    app.state.listener = listener
    # what the fleet's first requests would teach it, read before serving them
    # (after LISTEN starts, so a submit elsewhere meanwhile still bumps its key)
    relearn = warmup.Relearn(
        app.state.sessionmaker, hb, queue_hints_of(app), lambda: owners_of(app)
    )
    await relearn.load()
    app.state.relearn = relearn
    services = list(getattr(app.state, "services", []))
    for start, _stop in services:
        start()
    freezer = gcpolicy.start(settings.gc_freeze_seconds)
    try:
        yield
    finally:
        await gcpolicy.stop(freezer)
        claimsread.close(app)
        for _start, stop in reversed(services):
            stop()
        await hb.stop()
        if listener is not None:
            await to_thread.run_sync(listener.stop)
