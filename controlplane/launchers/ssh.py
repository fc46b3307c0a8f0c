"""SSH through the server: open the session with the key from a secret, then install
and start the daemon exactly as ``dreamlake provider connect`` does — the engine's
``install.install`` and ``supervise`` functions, called, not copied. The instance is
the host (``user@host:port``); a ``hosts`` kwarg makes a pool a queue can grow on:
each launch takes the next host without a live daemon of this provider."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from . import sshconn
from .errors import LaunchRejected
from .order import LaunchOrder

START_GRACE = 1.0


def available() -> str | None:
    return None


def _free_hosts(order: LaunchOrder) -> list[str]:
    busy = set(order.busy)
    return [h for h in sshconn.hosts(order.kwargs) if sshconn.label(order.kwargs, h) not in busy]


def validate(order: LaunchOrder) -> None:
    """Offline: enough hosts without a daemon of this provider."""
    free = _free_hosts(order)
    if len(free) < order.count:
        raise LaunchRejected(
            f"asked for {order.count} host(s) but only {len(free)} of the provider's "
            "hosts have no daemon of this provider"
        )


def launch(order: LaunchOrder) -> dict[str, Any]:
    from ...engine import install, supervise

    boot = order.bootstrap
    if boot is None:
        raise LaunchRejected("an SSH launch needs the instance token (server-side bootstrap)")
    free = _free_hosts(order)
    if len(free) < order.count:
        raise LaunchRejected(
            f"asked for {order.count} host(s) but only {len(free)} of the provider's "
            "hosts have no daemon of this provider"
        )
    out: list[dict[str, Any]] = []
    for i, host in enumerate(free[: order.count]):
        iid = sshconn.label(order.kwargs, host)
        with sshconn.session(order.kwargs, host) as shell:
            cfg = install.DaemonConfig(
                provider=order.provider,
                server=boot.server,
                namespace=order.namespace,
                token=boot.tokens[i],
                queues=boot.queues,
                worker_name=iid,
                workdir=order.kwargs.get("workdir") or None,
            )
            inst = install.install(shell, cfg)
            caps = supervise.detect(shell)
            sup = supervise.choose(caps)
            if sup is None:
                raise supervise.no_supervisor_error(shell, iid)
            spec = supervise.DaemonSpec(
                provider=order.provider,
                run_script=inst.run_script,
                workdir=inst.dir,
                log=inst.log,
                user=caps.user,
            )
            supervise.start(shell, spec, sup, caps)
            time.sleep(START_GRACE)
            if not supervise.running(shell, order.provider, sup, caps):
                tail = supervise.log_tail(shell, spec, sup)
                raise RuntimeError(f"the daemon exited right after it was started on {iid}: {tail}")
        out.append({"id": iid, "state": "running", "index": i, "supervisor": sup, "dir": inst.dir})
    return {"instances": out}


def _host_of(order: LaunchOrder, iid: str) -> str:
    for h in sshconn.hosts(order.kwargs):
        if sshconn.label(order.kwargs, h) == iid:
            return h
    return iid


def describe(order: LaunchOrder, ids: Sequence[str]) -> dict[str, str]:
    from ...engine import supervise

    out: dict[str, str] = {}
    for iid in ids:
        try:
            with sshconn.session(order.kwargs, _host_of(order, iid)) as shell:
                caps = supervise.detect(shell)
                sup = supervise.choose(caps)
                alive = sup is not None and supervise.running(shell, order.provider, sup, caps)
            out[iid] = "running" if alive else "stopped"
        except LaunchRejected:
            raise
        except Exception:
            out[iid] = "unreachable"
    return out


def terminate(order: LaunchOrder, ids: Sequence[str]) -> None:
    from ...engine import supervise

    for iid in ids:
        with sshconn.session(order.kwargs, _host_of(order, iid)) as shell:
            supervise.stop(shell, order.provider)
