"""``lakeshore serve``'s uvicorn: sized for a fleet of keep-alive daemons.

* **Listen backlog** ``Settings.backlog`` (16384 by default). The kernel caps what
  ``listen()`` asks to ``net.core.somaxconn`` (4096 on Linux 5.4 and newer, 128
  before); :func:`effective_backlog` says what a server really got, and start-up
  logs a warning when the cap applies. Raise it with ``sysctl -w
  net.core.somaxconn=16384`` where a fleet reconnects at once.
* **Listeners** ``Settings.listeners`` (8 by default) sockets on the port, in one
  ``SO_REUSEPORT`` group: the kernel spreads new connections over them, each with
  its own backlog. The event loop (libuv) takes one connection per listening socket
  per turn of the loop, and a turn waits for the interpreter lock whenever a thread
  of the pool (a claim, a result) holds it, up to the switch interval below; with
  one socket, a fleet that opens a connection per request (about 1,500 a second at
  10,000 daemons) then outran the loop, and the backlog grew to thousands. The port
  is first bound alone, so a port already taken (by anything, another ``lakeshore
  serve`` included) is refused as before, never shared. ``1``: one socket.
* **Keep-alive** ``Settings.keep_alive`` seconds: longer than the heartbeat interval
  and than the longest long-poll, so a daemon's connections are not closed under it
  between two requests (uvicorn's own default is 5 s).
* **Connections**: the open-files soft limit is raised to the hard one, and
  ``Settings.max_connections`` (unset: that limit less a reserve) bounds how many
  connections are served before :class:`~.shedding.Shed` answers 503 with
  ``Retry-After``; uvicorn's live connection set is handed to it through
  ``app.state.connections``.
* **Probes**: with ``Settings.probe_port``, ``/healthz`` and ``/readyz`` are
  served on that port too, by a listener outside the event loop (see ``health.py``),
  so a probe does not queue behind a flood of other connections.
* **TLS**: with a :class:`~..tls.Reloader`, both ports serve HTTPS, reloaded in
  place. With ``Settings.tls_processes`` (0 by default) edge processes do the main
  port's handshakes (``server/edge/``): they hold the
  socket group, refuse connections whose client has already given up before any
  handshake, and relay each connection to this loop over a Unix socket with the
  client's address and certificate first, so the loop spends no time on TLS; a
  handshake costs a few milliseconds of CPU, and with 10,000 daemons reconnecting
  at once one loop doing them all fell behind for good. ``0``: the loop does the
  handshakes from the Reloader's one context, as the probe port always does.
  (Opt-in for now: with two edges 2,000 TLS daemons settle on a quiet 2-core
  machine, 10,000 do not yet; see benchmarks/README.md.)
* **A proxy's forwarded certificate**: with ``app.state.forwarded_certs``
  (``--client-cert-header``), each request's daemon certificate may come from a
  trusted proxy's header (``identity/forwarded.py``).
* **A proxy's scheme and client address** (``X-Forwarded-Proto``,
  ``X-Forwarded-For``): taken only from a TCP peer on this machine (``127.0.0.1``,
  ``::1``) or in a ``--trusted-proxy`` network (:func:`forwarded_from`), ignored from
  any other; uvicorn's own ``FORWARDED_ALLOW_IPS`` is not read.
* **The event loop first**: the interpreter's thread switch interval is 1 ms, not
  5 ms. The loop gives up the GIL at every wait for sockets, and a thread of the
  pool that holds it (a listing, a claim) keeps it until the interval runs out: at
  5 ms each of a request's turns of the loop could wait that long.
* **Shutdown**: the listener closes (with TLS edges: they stop accepting and the
  port closes, while they relay what is open), ``app.state.draining`` is set, so every held
  long-poll answers 503 with a spread ``Retry-After`` (see
  ``shedding.restarting``) and the fleet comes back over seconds, not at once,
  and each connection closes after its answer. Answering 10,000 held polls takes
  the loop seconds, so they get up to :data:`DRAIN_SECONDS` before uvicorn's
  grace (``Settings.shutdown_grace_seconds``, 2 s) begins for anything still in
  flight; what still runs when the grace ends is cancelled and answered 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..settings import Settings
from .shedding import connection_budget, open_files_limit

SOMAXCONN = Path("/proc/sys/net/core/somaxconn")
SWITCH_INTERVAL = 0.001  # seconds; Python's default is 0.005
# On shutdown, the requests already read (held polls answered 503, the rest as
# usual) get this long to be answered before uvicorn's grace
# (``shutdown_grace_seconds``) starts: 10,000 held polls take the loop seconds.
DRAIN_SECONDS = 20.0
log = logging.getLogger("lakeshore.serve")


class ProbePortError(OSError):
    """The probe listener's port cannot be bound (the sentence says why)."""


class ListenError(OSError):
    """The server's own port cannot be bound (the sentence says why)."""


def listening_sockets(host: str, port: int, count: int, backlog: int) -> list[socket.socket]:
    """``count`` sockets listening on ``host:port`` in one ``SO_REUSEPORT`` group
    (``port`` 0: one the kernel picks), after binding the port alone once: a port
    something else holds, another group included, raises :class:`ListenError`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as alone:
            alone.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            alone.bind((host, port))
            port = alone.getsockname()[1]
    except OSError as exc:
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    group: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(family, socket.SOCK_STREAM)
            group.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, port))
            sock.listen(backlog)
    except OSError as exc:
        for sock in group:
            sock.close()
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return group


def somaxconn() -> int | None:
    """The kernel's cap on a listen backlog, when it can be read."""
    try:
        return int(SOMAXCONN.read_text().strip())
    except (OSError, ValueError):
        return None


def effective_backlog(asked: int) -> int:
    cap = somaxconn()
    return asked if cap is None else min(asked, cap)


async def drained(tasks: Any, bound: float) -> bool:
    """Wait until ``tasks`` (uvicorn's requests in flight) is empty, at most
    ``bound`` seconds; whether it emptied."""
    loop = asyncio.get_running_loop()
    ends = loop.time() + bound
    while tasks and loop.time() < ends:
        await asyncio.sleep(0.05)
    return not tasks


def prepare(settings: Settings) -> Settings:
    """Raise the open-files limit and fill in ``max_connections`` from it."""
    files = open_files_limit()
    if settings.max_connections is None:
        settings.max_connections = connection_budget(files)
    return settings


def collect_start_up(settings: Settings) -> None:
    """Collect once what start-up left and turn the cycle collector back on, when
    ``lakeshore serve`` turned it off while it imported and built the app (hundreds
    of thousands of objects that all stay: Python's collector walked them again and
    again, about a tenth of the start's CPU); with ``gc_freeze_seconds`` the survivors
    are frozen at once, as the server would do a moment later (``gcpolicy``)."""
    if gc.isenabled():
        return
    gc.collect()
    if settings.gc_freeze_seconds > 0:
        gc.freeze()
    gc.enable()


def tls_processes(settings: Settings) -> int:
    """How many TLS edge processes serve the port (``Settings.tls_processes``; unset
    or 0: none, TLS on the event loop)."""
    return max(0, settings.tls_processes or 0)


LOOPBACK = ("127.0.0.1", "::1")


def forwarded_from(trusted: Sequence[str] = ()) -> list[str]:
    """The peers whose ``X-Forwarded-Proto`` / ``X-Forwarded-For`` the server takes:
    this machine, and the ``--trusted-proxy`` networks (parsed as that option is, so
    an address alone is its own network and host bits are allowed: uvicorn, given
    ``10.0.0.5/24``, would quietly trust nothing)."""
    from ..identity.forwarded import networks

    return [*LOOPBACK, *(str(net) for net in networks(trusted))]


def run(
    application: Any,
    settings: Settings,
    *,
    host: str,
    port: int,
    log_level: str,
    access_log: bool,
    tls: Any = None,
    trusted_proxies: Sequence[str] = (),
) -> None:
    """Serve ``application``; with ``tls`` (a :class:`~..tls.Reloader`) in HTTPS on
    the main port and the probe port, from its one context; ``trusted_proxies``: the
    networks besides this machine whose forwarded scheme and address are taken."""
    import uvicorn

    sys.setswitchinterval(SWITCH_INTERVAL)
    config = uvicorn.Config(
        application,
        host=host,
        port=port,
        log_level=log_level,
        log_config=None,  # uvicorn's loggers go through the handler configured already
        timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_seconds),
        access_log=access_log,
        backlog=settings.backlog,
        timeout_keep_alive=math.ceil(settings.keep_alive),
        forwarded_allow_ips=forwarded_from(trusted_proxies),
    )
    edges = None
    if tls is not None:
        config.load()
        processes = tls_processes(settings)
        if processes > 0:  # TLS in edge processes, relayed to this loop over a Unix socket
            from ..edge.relayed import relayed
            from ..edge.supervisor import Edges

            edges = Edges(
                processes,
                listening_sockets(host, port, max(1, settings.listeners), settings.backlog),
                cert=str(tls.cert),
                key=str(tls.key),
                client_ca=tls.client_ca,
                state=application.state,
                backlog=settings.backlog,
                relays=max(1, settings.listeners),
                drain_seconds=DRAIN_SECONDS + settings.shutdown_grace_seconds + 5,
            )
            config.http_protocol_class = relayed(config.http_protocol_class, edges)
        else:
            config.ssl = tls.context  # the Reloader's: a reload reaches every listener
            from ..identity.peer import with_peer_cert  # a daemon's certificate, per request

            config.http_protocol_class = with_peer_cert(config.http_protocol_class)
    from ..access.early import refusing  # a body with no credential: 401 from its headers

    if not config.loaded:
        config.load()
    config.http_protocol_class = refusing(config.http_protocol_class, application.state)
    forwarded = getattr(application.state, "forwarded_certs", None)
    if forwarded is not None:  # a daemon's certificate from a trusted proxy's header
        from ..identity.forwarded import forwarding

        config.http_protocol_class = forwarding(
            config.http_protocol_class, forwarded, application.state
        )
    draining = getattr(application.state, "draining", None)

    class FleetServer(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            if edges is not None:  # the edges stop accepting; what they relay drains below
                edges.stop_accepting()
            if draining is not None:
                # Stop accepting, have every held poll answer 503 + Retry-After, close
                # each connection after its answer, and let them all be answered
                # before uvicorn's grace begins: a grace that ends first answers 500.
                for listener in self.servers:
                    listener.close()
                draining.set()
                for connection in list(self.server_state.connections):
                    connection.shutdown()
                await drained(self.server_state.tasks, DRAIN_SECONDS)
            await super().shutdown(sockets)

    server = FleetServer(config)
    application.state.connections = server.server_state.connections
    got = effective_backlog(settings.backlog)
    if got < settings.backlog:
        log.warning(
            "listen backlog %d is capped to %d by net.core.somaxconn "
            "(sysctl -w net.core.somaxconn=%d to give a reconnecting fleet more)",
            settings.backlog,
            got,
            settings.backlog,
        )
    sockets = None
    if edges is not None:
        sockets = edges.sockets  # the edges hold the port's sockets
    elif settings.listeners > 1 and hasattr(socket, "SO_REUSEPORT"):
        sockets = listening_sockets(host, port, settings.listeners, settings.backlog)
    log.info(
        "serving a fleet: %d listening socket(s), backlog %d each, keep-alive %ds, 503 "
        "beyond %s connections or %s requests in flight",
        len(edges.listeners) if edges else len(sockets) if sockets else 1,
        got,
        math.ceil(settings.keep_alive),
        settings.max_connections or "unbounded",
        settings.max_pending or "unbounded",
    )
    probes = None
    if settings.probe_port is not None:
        from ..health import ProbeListener

        try:
            context = tls.context if tls is not None else None
            probes = ProbeListener(application, host, settings.probe_port, context).start()
        except OSError as exc:
            raise ProbePortError(
                f"cannot serve the probes on {host}:{settings.probe_port}: {exc.strerror or exc}"
            ) from None
        log.info("probes (/healthz, /readyz) also on port %d, off the event loop", probes.port)
    if tls is not None:
        tls.start()  # reload on SIGHUP or a changed file
    if edges is not None:
        tls.on_reload.append(edges.reload)
        edges.start()
    collect_start_up(settings)
    try:
        server.run(sockets=sockets)
    finally:
        if edges is not None:
            edges.stop()
        if tls is not None:
            tls.stop()
        if probes is not None:
            probes.stop()
        for sock in sockets or ():
            with contextlib.suppress(OSError):
                sock.close()
