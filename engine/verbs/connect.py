"""``dreamlake provider connect``: put a daemon on the provider's host that claims it.

In the spec's order:

1. a live worker already claims the provider → ``exists``, and no SSH at all;
2. the host: ``--host``, else ``adopt.json`` (ssh vendor), else the host an earlier
   connect recorded (``daemon.json``, :mod:`..daemon_host`), else this machine for
   the ``local`` vendor (no SSH), else the applied infrastructure's ``worker_host``
   output — a derived host, named in the progress line before it is contacted and
   in the result's ``host``; none → ``needs_input`` with a ``host`` blocking;
3. SSH in batch mode (accept-new host keys, bounded): a refused key → ``error``
   with ``ssh-copy-id``; unreachable → ``error``;
4. install the daemon (:mod:`..install`) under the provider's identity
   (:mod:`..daemon_key`; an install an older dreamlake keyed by the name is moved
   first), and record the host in ``daemon.json``: every later verb reaches it;
5. start it under the best supervisor the host has (:mod:`..supervise`), and say
   which; return once the start returns, holding no connection;
6. watch the control plane for a short bounded time: a claim → ``connected``,
   none yet → ``connecting`` with a ``status`` next action.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..contract import commands, events
from ..contract.errors import DreamlakeError, RemoteError
from ..contract.result import EditThenContinue, ProviderLifecycleResult, Run
from ..contract.result import Shell as ShellAction
from ..remote import open_shell
from ..remote.base import Shell
from ..settings.records import replace
from ..world import lakeshore
from ..world.derive import Derived, Observation
from ..world.observe import observe, to_result
from ..world.paths import ProviderPaths, check_name
from ..world.refusal import SERVE_IN_BACKGROUND, SERVER_INSTALL, server_installed
from . import connect_failed
from ._common import error_result, root_for
from .connect_host import adopt_with_host, leave_recorded_host, needs_host, write_adopt
from .connect_in_cluster import IN_CLUSTER_VENDORS, in_cluster

Progress = Callable[[str], None]
ShellFactory = Callable[[Any], Shell]
"""Opens a shell for a target (an SSHTarget, or None for this machine)."""

DEFAULT_WATCH = 20.0
START_GRACE = 1.0
LOCAL_VENDORS = ("local",)


def _outputs(obs: Observation) -> dict[str, Any]:
    """The outputs observe already read with the state (a backend's ``outputs()`` is
    that same read again)."""
    return dict(obs.infra.outputs) if obs.infra is not None else {}


def _plain(v: Any) -> Any:
    """A terraform/pulumi output value ({"value": ...} or the bare value)."""
    if isinstance(v, dict) and "value" in v:
        return v["value"]
    return v


def _queues(v: Any) -> tuple[str, ...]:
    v = _plain(v)
    if isinstance(v, str):
        return tuple(q.strip() for q in v.split(",") if q.strip())
    if isinstance(v, list):
        return tuple(str(q) for q in v)
    return ()


def connect(
    name: str,
    *,
    host: str | None = None,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    progress: Progress | None = None,
    watch: float | None = None,
    shell_factory: ShellFactory | None = None,
) -> ProviderLifecycleResult:
    """Connect provider ``name``: see the module docstring for the order of steps."""
    root = root_for(dream_dir, cwd)
    say = progress or (lambda _m: None)
    try:
        check_name(name)
        obs = observe(name, root, dream_dir, probe=False)
        # The host given here is a decision the person made: it is kept in adopt.json
        # (so a later connect, the restart the prose offers, needs no --host), but only
        # once connect started a daemon there: a failed connect writes nothing.
        pending = adopt_with_host(ProviderPaths(obs.dir), host) if obs.adopt and host else None
        if pending is not None:
            filled = {k for k, v in pending[1].items() if pending[0].get(k) != v}
            obs = replace(obs, blocking=tuple(b for b in obs.blocking if b.key not in filled))
        if obs.record is not None and (obs.claims is None or obs.claims.live == 0):
            from ..world import rows

            cp = lakeshore.resolve_control_plane(root.path)
            rows.check(cp, name, obs.record.identity(obs.dir), dream_dir, obs.record.vendor)
    except DreamlakeError as exc:
        return error_result(exc, name, root=root, dream_dir=dream_dir)
    try:
        from ._busy import busy, may_act

        if not may_act(obs, "connect"):
            # An apply or destroy in flight or interrupted: never a daemon on top of it.
            return busy(obs, "connect")
        from ..world.intent import recording

        with recording(obs.dir, "connect") as rec:
            adopt = pending[1] if pending is not None else None
            res = _connect(obs, host, dream_dir, say, watch, shell_factory or open_shell, adopt)
            if pending is not None and res.status in ("connected", "connecting"):
                paths = ProviderPaths(obs.dir)
                if write_adopt(paths, *pending):
                    say(f"wrote the host {host} into {paths.adopt_json}")
            if res.status == "connecting":
                # The daemon runs and has not claimed yet: status says connecting
                # while its supervisor runs it, within the start window.
                rec.finish("connecting")
        return res
    except DreamlakeError as exc:
        vendor = obs.record.vendor if obs.record else None
        if exc.kind in connect_failed.REMOTE_KINDS and exc.next_action is None:
            # The same host, unchanged, hangs or drops the connection again.
            nxt, why = connect_failed.host_failed(ProviderPaths(obs.dir), name, dream_dir, host)
            exc.message, exc.next_action = f"{exc.message}. {why}", nxt
        res = error_result(
            exc,
            name,
            root=root,
            vendor=vendor,
            dream_dir=dream_dir,
            default_next=Run(command=commands.connect(name, dream_dir, host)),
        )
        extra = getattr(exc, "host_label", None)
        return res.model_copy(update={"host": extra}) if extra else res
    except (OSError, EOFError) as exc:  # a transfer or connection that broke mid-way
        vendor = obs.record.vendor if obs.record else None
        nxt, why = connect_failed.host_failed(ProviderPaths(obs.dir), name, dream_dir, host)
        wrapped = RemoteError(
            f"connect could not finish: {exc or type(exc).__name__}. What was installed is "
            f"kept and the daemon is (re)started by the next connect; {why}",
            kind="remote_io",
            next_action=nxt,
        )
        return error_result(wrapped, name, root=root, vendor=vendor, dream_dir=dream_dir)


def _connect(
    obs: Observation,
    host: str | None,
    dd: str | None,
    say: Progress,
    watch: float | None,
    factory: ShellFactory,
    adopt_given: dict[str, Any] | None = None,
) -> ProviderLifecycleResult:
    from ..daemon import host as daemon_host
    from ..remote.ssh import SSHTarget, parse_host

    name = obs.name
    assert obs.record is not None
    vendor = obs.record.vendor
    paths = ProviderPaths(obs.dir)

    # 1. Idempotence before action: a live claim means nothing to do, and no ssh.
    if obs.claims is not None and obs.claims.live > 0:
        n = obs.claims.live
        return to_result(
            obs, Derived("exists", Run(command=commands.status(name, dd)), obs.blocking), files=[]
        ).with_headline(
            f"⚠ {n} live worker{'s' if n != 1 else ''} already claim{'s' if n == 1 else ''} "
            f"'{name}' — nothing was started, nothing was touched"
        )

    # 2. Is there something to connect to, and where?
    queues: tuple[str, ...] = ()
    worker_name: str | None = None
    workdir: str | None = None
    target: SSHTarget | None = None
    local = False
    source = "--host" if host else "adopt"
    if obs.adopt:
        adopt = adopt_given or daemon_host.read_adopt(paths)
        blocking = tuple(
            b for b in obs.blocking if not (host and b.key in ("host", "user", "port"))
        )
        if blocking:
            nxt = EditThenContinue(
                file=next((b.file for b in blocking if b.file), str(paths.adopt_json)),
                command=commands.connect(name, dd, host),
            )
            return to_result(obs, Derived("needs_input", nxt, blocking))
        spec = host or adopt.get("host")
        if not spec:  # the scan reports it; this guards a hand-edited record
            return needs_host(obs, dd, str(paths.adopt_json))
        target = daemon_host.host_target(obs, host)  # as suspend, resume and destroy reach it
        queues = _queues(adopt.get("queues"))
        worker_name = adopt.get("worker_name") or None
    else:
        infra = obs.infra
        if vendor in IN_CLUSTER_VENDORS and not host:
            return in_cluster(obs)
        if (
            infra is None
            or infra.lock is not None
            or not infra.present
            or infra.failed_apply is not None
        ):
            res = to_result(obs)
            return res.with_notes(
                "connect puts a daemon on applied infrastructure; "
                f"'{name}' is {res.status}, so nothing was started."
            )
        outs = {k: _plain(v) for k, v in _outputs(obs).items()}
        queues = _queues(outs.get("queues"))
        worker_name = str(outs["worker_name"]) if outs.get("worker_name") else None
        workdir = str(outs["workdir"]) if outs.get("workdir") else None
        recorded = None if host else daemon_host.read(obs.dir)
        if host:
            target = parse_host(host, user=outs.get("worker_user") or None)
        elif recorded is not None:
            # The host an earlier connect used (a restart): never the outputs' instead.
            local, target, source = recorded.local, recorded.target, "record"
        elif vendor in LOCAL_VENDORS:
            local, source = True, "local"
        elif outs.get("worker_host"):
            # Derived, not given: named in the progress line before it is contacted,
            # in the result, and in the record every later verb reads.
            target = parse_host(str(outs["worker_host"]), user=outs.get("worker_user") or None)
            source = "outputs"
        else:
            where = paths.pulumi if obs.backend == "pulumi" else paths.terraform / "outputs.tf"
            return needs_host(obs, dd, str(where))

    # No token, no claim: say so before any ssh.
    cp = lakeshore.resolve_control_plane(obs.dir.parent.parent.parent)
    if not cp.token:
        raise DreamlakeError(
            f"no control-plane token for {cp.url} (source: {cp.source}): a daemon could not "
            "claim the provider. Start the embedded control plane in the background (it writes "
            "the token), or set LAKESHORE_URL and LAKESHORE_TOKEN; then re-run connect.",
            kind="no_lakeshore",
            # `lakeshore serve` in the foreground never returns: an agent would wait forever;
            # where it is not installed, installing the server extra comes first.
            next_action=ShellAction(command=SERVE_IN_BACKGROUND)
            if server_installed()
            else ShellAction(command=SERVER_INSTALL, approval=True),
        )

    # One daemon per provider: one recorded on another host is taken down first.
    moved_from = leave_recorded_host(obs, local, target, say, factory)

    # 3. The shell: this machine, or ssh in batch mode.
    label = "localhost" if local or target is None else target.label
    line = f"connecting to {label}" + ("" if local else " over ssh (BatchMode=yes, accept-new)")
    if source == "outputs":
        line += " — the host the worker_host output names (pass --host to use another)"
    events.step("connect", line)
    say(line)
    try:
        shell = factory(None if local else target)
    except RemoteError as exc:
        exc.host_label = label  # type: ignore[attr-defined]
        raise
    try:
        res = _install_and_start(
            obs,
            cp,
            shell,
            label,
            local,
            dd,
            say,
            watch,
            queues,
            worker_name,
            workdir,
            (target, source),
        )
        if source == "outputs":
            moved_from.append(
                f"host {label} is the one the worker_host output names (no --host was given); "
                "it is recorded, and every later verb reaches it"
            )
        return res.with_notes(*moved_from) if moved_from else res
    finally:
        shell.close()


def _ca_pem(cp: lakeshore.ControlPlane) -> bytes | None:
    """The CA certificate this run verified an https control plane with, for the
    daemon to verify it too (None: the system's trust store, there as here)."""
    if not cp.url.startswith("https://") or not cp.ca:
        return None
    try:
        return Path(cp.ca).expanduser().read_bytes()
    except OSError:
        return None  # the mint above verified with it; a vanished file: the host's store


def _install_and_start(
    obs: Observation,
    cp: lakeshore.ControlPlane,
    shell: Shell,
    label: str,
    local: bool,
    dd: str | None,
    say: Progress,
    watch: float | None,
    queues: tuple[str, ...],
    worker_name: str | None,
    workdir: str | None,
    where: tuple[Any, str] = (None, "local"),
) -> ProviderLifecycleResult:
    from ..daemon import (
        host as daemon_host,
    )
    from ..daemon import (
        identity,
        install,
    )
    from ..daemon import (
        key as daemon_key,
    )
    from ..daemon import (
        start as supervise,
    )
    from ..daemon import (
        stop as daemonctl,
    )

    name = obs.name
    notes: list[str] = []
    dk = daemon_key.of(obs)
    if not local and lakeshore.is_loopback(cp.url) and not _loopback_host(label):
        notes.append(
            f"⚠ the control plane is {cp.url}: the daemon on {label} reaches it only if that "
            "address means this machine there. Set LAKESHORE_URL to an address the host can reach."
        )

    # The token the host's install holds (under the identity key, or the name key of
    # an older dreamlake's install of this identity): the new one replaces it. Minted
    # before anything on the host changes, so a refused mint leaves the host as it was.
    existing = identity.held_token(shell, dk)
    root = obs.dir.parent.parent.parent
    token = identity.mint(
        cp, name, label, existing, commands.connect(name, dd), key=dk.key, root=root
    )
    # An install keyed by the name (an older dreamlake's) moves under the identity key.
    moved = daemonctl.move_legacy(shell, dk)
    cfg = install.DaemonConfig(
        provider=name,
        server=cp.url,
        namespace=cp.namespace,
        token=token,
        queues=queues,
        worker_name=worker_name,
        workdir=workdir,
        identity=dk.identity,
        key=dk.key,
        ca_pem=_ca_pem(cp),
    )
    inst = install.install(shell, cfg, progress=say)
    notes.extend(inst.notes)
    # The daemon now lives on this host: every later verb reaches this host, and no other.
    recorded = daemon_host.write(obs.dir, local, where[0], dk.key, where[1])

    caps = supervise.detect(shell)
    sup = supervise.choose(caps)
    if sup is None:
        raise supervise.no_supervisor_error(shell, None if local else label)
    spec = supervise.DaemonSpec(
        provider=name,
        run_script=inst.run_script,
        workdir=inst.dir,
        log=inst.log,
        user=caps.user,
        key=dk.key,
    )
    events.step("start", f"starting the daemon under {sup}")
    say(f"starting the daemon under {sup}")
    supervise.start(shell, spec, sup, caps)
    time.sleep(START_GRACE)
    if not supervise.running(shell, dk.key, sup, caps):
        tail = supervise.log_tail(shell, spec, sup)
        # Started again unchanged, it exits again: the host needs repairing first.
        fix, why = connect_failed.daemon_exited(
            label, inst.log, local=local, rerun=commands.connect(name, dd)
        )
        raise DreamlakeError(
            f"the daemon exited right after it was started under {sup} on {label}"
            + (f":\n{tail}" if tail else f"; see {inst.log}")
            + f"\n{why}",
            kind="daemon_exited",
            next_action=fix,
        )
    # ...and under what: while a live claim proves it runs, status reads it here.
    recorded = daemon_host.write(obs.dir, local, where[0], dk.key, where[1], sup) or recorded
    shell.close()  # the connection is never the supervisor
    notes = [
        f"✓ daemon installed in {label}:{inst.dir}" + ("" if inst.changed else " (unchanged)"),
        *supervise.describe(sup, spec, remote=not local, rerun=commands.connect(name, dd)),
        *([moved] if moved else []),
        *notes,
    ]
    degraded = ("no-supervisor",) if sup == "tmux" else ()

    # 6. Watch the control plane for a short, bounded time.
    limit = DEFAULT_WATCH if watch is None else watch
    events.step("wait", f"waiting up to {limit:.0f}s for the daemon to claim '{name}'")
    say(f"waiting up to {limit:.0f}s for the daemon to claim '{name}'")
    deadline = time.monotonic() + limit
    ident = obs.record.identity(obs.dir) if obs.record else None
    claim = lakeshore.fetch_claims(cp, name, identity=ident)
    while (claim is None or claim.live == 0) and time.monotonic() < deadline:
        time.sleep(0.5)
        claim = lakeshore.fetch_claims(cp, name, identity=ident)
    seen = replace(
        obs,
        degraded=tuple(d for d in obs.degraded if d != "no-lakeshore" or claim is None),
        claims=claim,
        server=cp.url,
        namespace=cp.namespace,
        intent=None,
    )
    if claim is not None and claim.live > 0:
        dv = Derived("connected", None, obs.blocking)
    else:
        dv = Derived("connecting", Run(command=commands.status(name, dd)), obs.blocking)
        notes.insert(
            0,
            f"⚠ the daemon started on {label} but has not claimed '{name}' within {limit:.0f}s — "
            f"check again with status (log: {inst.log})",
        )
    from ..world import rows

    notes.extend(rows.register(seen))
    files = [str(recorded)] if recorded else []
    return to_result(
        seen, dv, files=files, extra_degraded=degraded, supervisor=sup, host=label
    ).with_notes(*notes)


def _loopback_host(label: str) -> bool:
    h = label.rsplit("@", 1)[-1]
    if h.startswith("["):
        h = h[1:].split("]")[0]
    elif h.count(":") == 1:
        h = h.split(":")[0]
    return h in lakeshore.LOOPBACK_HOSTS or h.startswith("127.")


__all__ = ["connect"]
