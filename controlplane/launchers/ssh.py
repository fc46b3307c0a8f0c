"""SSH through the server: open the session with the key from a secret, then

* ``daemon`` dispatch: install and start the daemon exactly as ``dreamlake provider
  connect`` does — the engine's ``install.install`` and ``supervise`` functions,
  called, not copied. The instance is the host (``user@host:port``).
* ``direct`` dispatch: run the launch's command on the host, detached, in a folder
  of its own (``~/.lakeshore/runs/<name>``): its exit status and output tail are the
  instance's outcome, read back by ``describe``. The instance is
  ``user@host:port/<name>``.

A ``hosts`` kwarg makes a pool: instances spread over the hosts, the least loaded
first, and a host holds at most ``instances_per_host`` of the provider's live
instances (default 1; a host runs one daemon of a provider). A host already running
a daemon of this provider that is not this request's own is never installed over:
a relaunch never kills a daemon running work.

A daemon is named on its host by its provider's identity, by the same rule (and the
same code, ``engine.daemon.key``) as ``dreamlake provider connect``: its folder is
``~/.dreamlake/nymph/<key>`` and its tmux session / systemd unit ``nymph-<key>``,
``<key>`` from the provider row's ``identity`` (a lifecycle provider's ``prv-…``),
or for a row with none from its place on this control plane (namespace and name).
Two providers of one name never share a daemon. An install an older version keyed
by the name is still found (and stopped) when it is this provider's: its
``nymph.json`` names this identity, or this instance as its worker.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping, Sequence
from typing import Any

from . import sshconn
from .errors import LaunchRejected
from .order import LaunchOrder

START_GRACE = 1.0
RUNS = "$HOME/.lakeshore/runs"
TAIL_BYTES = 4000


def available() -> str | None:
    return None


def daemon_key(order: LaunchOrder) -> Any:
    """The :class:`~dreamlake.engine.daemon.key.DaemonKey` of the order's provider."""
    from dreamlake.engine.daemon.key import DaemonKey

    identity = order.identity or f"lakeshore:{order.namespace}/{order.provider}"
    return DaemonKey(order.provider, identity)


def _keys(shell: Any, order: LaunchOrder, iid: str) -> list[str]:
    """The keys this instance's daemon may be under on ``shell``'s host: the identity
    key, and the name key when an install there under it is this provider's (its
    ``nymph.json`` names this identity or this instance as its worker)."""
    import json

    from dreamlake.engine.daemon.key import NYMPH_HOME

    dk = daemon_key(order)
    if dk.key == dk.legacy:
        return [dk.key]
    old = f'"{NYMPH_HOME}/{dk.legacy}/nymph.json"'
    marks = (dk.marker(), f'"workerName": {json.dumps(iid)}')
    found = " ".join(f"-e {shlex.quote(m)}" for m in marks)
    res = shell.run(f"grep -qF {found} {old} 2>/dev/null && echo legacy; true", timeout=30)
    return [dk.key, dk.legacy] if "legacy" in res.stdout else [dk.key]


def per_host(order: LaunchOrder) -> int:
    """How many of the provider's live instances one host may hold."""
    if order.dispatch == "daemon":
        return 1  # the daemon's install folder and supervisor are the provider's
    value = order.kwargs.get("instances_per_host", 1)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise LaunchRejected("instances_per_host must be a whole number ≥ 1")
    return value


def host_label(iid: str) -> str:
    """The host part of an instance id (a direct run's id is ``<host>/<name>``)."""
    return iid.split("/", 1)[0]


def placement(order: LaunchOrder, skip: Sequence[str] = ()) -> list[str]:
    """Pure: the hosts for the order's instances, in order — each time the least
    loaded host with room (ties by the pool's order), skipping ``skip``."""
    cap = per_host(order)
    labels = {h: sshconn.label(order.kwargs, h) for h in sshconn.hosts(order.kwargs)}
    load = {h: 0 for h in labels}
    for iid in order.busy:
        for h, lab in labels.items():
            if host_label(iid) == lab:
                load[h] += 1
    out: list[str] = []
    for _ in range(order.count):
        open_ = [h for h in labels if load[h] < cap and labels[h] not in skip]
        if not open_:
            break
        best = min(open_, key=lambda h: load[h])
        load[best] += 1
        out.append(best)
    return out


def _short(order: LaunchOrder, found: int) -> LaunchRejected:
    return LaunchRejected(
        f"asked for {order.count} instance(s) but the provider's hosts have room for "
        f"{found} ({per_host(order)} per host; {len(order.busy)} live instance(s)): "
        "terminate one (lakeshore instances terminate ID) or add hosts"
    )


def validate(order: LaunchOrder) -> None:
    """Offline: enough room on the provider's hosts, and a command for direct."""
    if order.dispatch != "daemon" and not order.run.get("command"):
        raise LaunchRejected(
            "a direct SSH launch runs a command: pass --command (or set the provider's "
            "dispatch to daemon to leave a daemon)"
        )
    found = len(placement(order))
    if found < order.count:
        raise _short(order, found)


def launch(order: LaunchOrder) -> dict[str, Any]:
    validate(order)
    if order.dispatch == "daemon":
        return _launch_daemons(order)
    return _launch_direct(order)


# -- daemon ------------------------------------------------------------------------


def _running(shell: Any, order: LaunchOrder, host: str, index: int) -> str | None:
    """Whose daemon of this provider runs on the host: ``"theirs"`` (not this
    request's), ``"ours"`` (this request's, found by a retry: left running as it is,
    its certificate kept, since its bootstrap token is spent), or None."""
    from dreamlake.engine.daemon import install
    from dreamlake.engine.daemon import start as supervise

    from ...engine.remote.base import home

    caps = supervise.detect(shell)
    sup = supervise.choose(caps)
    if sup is None:
        return None
    assert order.bootstrap is not None
    found = None
    for key in _keys(shell, order, sshconn.label(order.kwargs, host)):
        if not supervise.running(shell, key, sup, caps):
            continue
        folder = install.install_dir(home(shell), key)
        res = shell.run(f"cat {shlex.quote(folder + '/token')} 2>/dev/null; true", timeout=30)
        if res.stdout.strip() != order.bootstrap.tokens[index]:
            return "theirs"
        found = "ours"
    return found


def _launch_daemons(order: LaunchOrder) -> dict[str, Any]:
    from dreamlake.engine.daemon import install
    from dreamlake.engine.daemon import start as supervise

    boot = order.bootstrap
    if boot is None:
        raise LaunchRejected("an SSH launch needs the instance token (server-side bootstrap)")
    out: list[dict[str, Any]] = []
    skipped: list[str] = []
    for i in range(order.count):
        hosts = placement(
            _with_busy(order, [o["id"] for o in out]), skip=skipped + [o["id"] for o in out]
        )
        while hosts:
            host = hosts[0]
            iid = sshconn.label(order.kwargs, host)
            with sshconn.session(order.kwargs, host) as shell:
                whose = _running(shell, order, host, i)
                if whose == "theirs":
                    skipped.append(iid)  # someone's daemon works there: never restarted
                    hosts = placement(
                        _with_busy(order, [o["id"] for o in out]),
                        skip=skipped + [o["id"] for o in out],
                    )
                    continue
                dk = daemon_key(order)
                if whose == "ours":  # a retry: this request's daemon already works there
                    from ...engine.remote.base import home

                    sup = supervise.choose(supervise.detect(shell))
                    folder = install.install_dir(home(shell), dk.key)
                    out.append(
                        {"id": iid, "state": "running", "index": i, "supervisor": sup,
                         "dir": folder}
                    )  # fmt: skip
                    break
                cfg = install.DaemonConfig(
                    provider=order.provider,
                    server=boot.server,
                    namespace=order.namespace,
                    token=boot.tokens[i],  # over TLS a bootstrap token, spent by the daemon
                    queues=boot.queues,
                    ca_pem=boot.ca_pem.encode() or None,  # verifies an https server
                    worker_name=iid,
                    workdir=order.kwargs.get("workdir") or None,
                    identity=order.identity,
                    key=dk.key,
                )
                inst = install.install(shell, cfg)
                caps = supervise.detect(shell)
                sup = supervise.choose(caps)
                if sup is None:
                    raise supervise.no_supervisor_error(shell, iid)
                if not supervise.running(shell, dk.key, sup, caps):
                    spec = supervise.DaemonSpec(
                        provider=order.provider,
                        run_script=inst.run_script,
                        workdir=inst.dir,
                        log=inst.log,
                        user=caps.user,
                        key=dk.key,
                    )
                    supervise.start(shell, spec, sup, caps)
                    time.sleep(START_GRACE)
                    if not supervise.running(shell, dk.key, sup, caps):
                        tail = supervise.log_tail(shell, spec, sup)
                        raise RuntimeError(
                            f"the daemon exited right after it was started on {iid}: {tail}"
                        )
            out.append(
                {"id": iid, "state": "running", "index": i, "supervisor": sup, "dir": inst.dir}
            )
            break
        else:
            raise LaunchRejected(
                f"no host of the pool has room for instance {i + 1} of {order.count}: "
                f"{', '.join(skipped)} already run a daemon of provider {order.provider!r} "
                "this control plane did not launch (see lakeshore instances list)"
            )
    return {"instances": out}


def _with_busy(order: LaunchOrder, extra: Sequence[str]) -> LaunchOrder:
    from dataclasses import replace

    return replace(order, busy=(*order.busy, *extra), count=1)


# -- direct ------------------------------------------------------------------------


def run_folder(name: str) -> str:
    return f"{RUNS}/{name}"


def direct_script(order: LaunchOrder, index: int) -> str:
    """The shell that starts the index-th run detached (pure). Running it again (a
    retried request) starts nothing twice."""
    command = str(order.run.get("command") or "")
    d = run_folder(order.name_for(index))
    workdir = order.kwargs.get("workdir")
    cd = f"cd {shlex.quote(str(workdir))} && " if workdir else ""
    inner = f'{cd}sh "$D/command.sh" > "$D/output.log" 2>&1; echo $? > "$D/rc.part"; mv "$D/rc.part" "$D/rc"'
    return (
        f'D="{d}"; umask 077; mkdir -p "$D" && cd "$D" || exit 1\n'
        "if [ -f pid ]; then exit 0; fi\n"
        "cat > command.sh <<'LAKESHORE_COMMAND'\n"
        f"{command}\nLAKESHORE_COMMAND\n"
        f"export D; setsid nohup sh -c {shlex.quote(inner)} > /dev/null 2>&1 < /dev/null &\n"
        "echo $! > pid\n"
    )


def _launch_direct(order: LaunchOrder) -> dict[str, Any]:
    hosts = placement(order)
    out: list[dict[str, Any]] = []
    for i, host in enumerate(hosts):
        name = order.name_for(i)
        iid = f"{sshconn.label(order.kwargs, host)}/{name}"
        with sshconn.session(order.kwargs, host) as shell:
            res = shell.run(direct_script(order, i), timeout=60)
            if not res.ok:
                raise RuntimeError(f"could not start the command on {iid}: {res.tail(4)}")
        out.append({"id": iid, "state": "running", "index": i, "runName": name})
    return {"instances": out}


def _outcome(shell: Any, name: str) -> str | Mapping[str, Any]:
    d = run_folder(name)
    res = shell.run(
        f'D="{d}"; if [ -f "$D/rc" ]; then echo "rc $(cat "$D/rc")"; '
        f'elif [ -f "$D/pid" ] && kill -0 "$(cat "$D/pid")" 2>/dev/null; then echo running; '
        f'elif [ -f "$D/pid" ]; then echo lost; else echo gone; fi; '
        f'tail -c {TAIL_BYTES} "$D/output.log" 2>/dev/null; true',
        timeout=30,
    )
    first, _, tail = res.stdout.partition("\n")
    word = first.strip()
    if word.startswith("rc "):
        code = int(word[3:]) if word[3:].strip().lstrip("-").isdigit() else None
        return {
            "state": "succeeded" if code == 0 else "failed",
            "exitCode": code,
            "outputTail": tail,
        }
    if word == "lost":
        return {
            "state": "failed",
            "exitCode": None,
            "outputTail": tail,
            "error": "the command stopped without an exit status (the host restarted?)",
        }
    return word or "unreachable"


def _host_of(order: LaunchOrder, iid: str) -> str:
    label = host_label(iid)
    for h in sshconn.hosts(order.kwargs):
        if sshconn.label(order.kwargs, h) == label:
            return h
    return label


def describe(order: LaunchOrder, ids: Sequence[str]) -> dict[str, Any]:
    from dreamlake.engine.daemon import start as supervise

    out: dict[str, Any] = {}
    for iid in ids:
        try:
            with sshconn.session(order.kwargs, _host_of(order, iid)) as shell:
                if "/" in iid:
                    out[iid] = _outcome(shell, iid.split("/", 1)[1])
                    continue
                caps = supervise.detect(shell)
                sup = supervise.choose(caps)
                alive = sup is not None and any(
                    supervise.running(shell, key, sup, caps) for key in _keys(shell, order, iid)
                )
            # the instance is the daemon: one no longer running there is over
            out[iid] = "running" if alive else "gone"
        except LaunchRejected:
            raise
        except Exception:
            out[iid] = "unreachable"
    return out


def terminate(order: LaunchOrder, ids: Sequence[str]) -> None:
    from dreamlake.engine.daemon import start as supervise

    for iid in ids:
        with sshconn.session(order.kwargs, _host_of(order, iid)) as shell:
            if "/" in iid:
                d = run_folder(iid.split("/", 1)[1])
                shell.run(
                    f'D="{d}"; [ -f "$D/rc" ] || {{ kill -TERM "-$(cat "$D/pid")" 2>/dev/null; '
                    f'echo 143 > "$D/rc"; }}; true',
                    timeout=30,
                )
                continue
            for key in _keys(shell, order, iid):
                supervise.stop(shell, key)
