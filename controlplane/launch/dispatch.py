"""How work reaches a launched instance: the one place that reads an order's
dispatch and says what the launch needs for it.

* ``direct``: the launch runs the request's command itself (an SSH session on the
  host, an ``sbatch`` of the command, a Job) and the command's outcome is recorded
  on the instance row. Nothing long-lived is left on the host; no token is minted.
* ``daemon``: the launch leaves a ``nymph`` daemon on the instance, started with a
  token minted for that instance alone; the daemon pulls work from the control
  plane. Only ``daemon`` instances grow a queue's workers.

The provider row decides (``Provider.config.dispatch``, else the launcher's default
from the registry: EC2 and GCE ``daemon``; Kube, SSH and SLURM ``direct``).
"""

from __future__ import annotations

from typing import Any

from ..registry.launchers import default_dispatch
from ..registry.merge import LaunchSpec

DIRECT = "direct"
DAEMON = "daemon"
HYBRID = "hybrid"
"""SSH and SLURM: a queue's first item runs direct while a daemon is installed behind
it (``launch.hybrid``); each launch is one or the other (``launch(dispatch=...)``)."""

BUNDLED = ("EC2", "GCE", "Kube", "SLURM")
"""Launchers whose instances fetch the daemon bundle from the control plane (SSH
uploads the engine's zipapp itself)."""


def of_provider(row: Any) -> str:
    """A provider row's dispatch: its own, else its launcher's default."""
    config = getattr(row, "config", None) or {}
    how = config.get("dispatch") if isinstance(config, dict) else None
    return str(how or default_dispatch(row.kind))


def leaves_daemon(spec: LaunchSpec) -> bool:
    """The launch leaves a daemon (and so mints one token per instance)."""
    return spec.dispatch == DAEMON


def needs_bundle(spec: LaunchSpec) -> bool:
    return leaves_daemon(spec) and spec.launcher in BUNDLED


def runs_command(spec: LaunchSpec) -> bool:
    """The launch runs the request's command itself (it needs one)."""
    return spec.dispatch == DIRECT


def grows_workers(dispatch: str) -> bool:
    """A queue can grow its workers through a provider of this dispatch."""
    return dispatch in (DAEMON, HYBRID)


def queue_refusal(provider: str, dispatch: str) -> str | None:
    """Why a queue cannot grow workers on ``provider`` (None: it can)."""
    if grows_workers(dispatch):
        return None
    return (
        f"provider {provider!r} dispatches {dispatch!r}: a queue grows daemon workers, "
        f"so set `lakeshore providers update {provider} --dispatch daemon` "
        "(or run the work with `lakeshore launch --command`)"
    )
