"""The actual lifecycle status (5), derived from the world, and where it is read.

=============  ================================================================
actual         in the world
=============  ================================================================
absent         no infrastructure state and no daemon (for ``local``/``ssh``: no
               daemon under any supervisor on the host)
provisioning   an apply or a connect in flight: a held lock, a daemon running
               that has not claimed yet (joining)
active         infrastructure up and, where the daemon is the provider
               (``local``/``ssh``), the daemon running or claiming
suspended      infrastructure present but stopped (as last applied: an
               ``aws_ec2_instance_state`` / an instance's desired status, or a
               ``power_state`` output), or
               the daemon stopped on purpose with its supervisor entry kept
failed         an interrupted apply (stale lock), a partial state, or an apply
               that failed part-way (status: ``error``, kind ``partial_apply``)
=============  ================================================================

Vendors suspend at one of two levels (:func:`level`): ``daemon`` (``local``,
``ssh``: the daemon is stopped, the host and its work directory stay) or
``infrastructure`` (``ec2``, ``gce``: the machines are stopped, their disks kept).
:func:`actual_status` is pure; :func:`observe_host` is the one probe of the host.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from ..daemon.suspend import HostDaemon
from ..world.derive import Observation
from ..world.power import power_stopped
from .planner import Actual

Level = Literal["daemon", "infrastructure"]
DAEMON_KINDS = ("local", "adopt")


def level(obs: Observation) -> Level:
    """Where this provider's suspend acts: on the daemon, or on the infrastructure."""
    if obs.adopt:
        return "daemon"
    kind = obs.template.kind if obs.template else ""
    return "daemon" if kind in DAEMON_KINDS else "infrastructure"


# Resources whose applied attributes say whether the machines run: type → (attribute,
# the values that mean stopped).
POWER_ATTRIBUTES: dict[str, tuple[str, tuple[str, ...]]] = {
    "aws_ec2_instance_state": ("state", ("stopped", "stopping")),
    "google_compute_instance": ("desired_status", ("TERMINATED", "SUSPENDED")),
}


def applied_stopped(state: Mapping[str, Any]) -> bool | None:
    """From a terraform state document: True when every machine it records is
    stopped as last applied, False when one runs, None when it records none."""
    seen: list[bool] = []
    for r in state.get("resources") or []:
        if r.get("mode", "managed") != "managed" or r.get("type") not in POWER_ATTRIBUTES:
            continue
        attr, stopped = POWER_ATTRIBUTES[r["type"]]
        for inst in r.get("instances") or []:
            value = (inst.get("attributes") or {}).get(attr)
            if value:
                seen.append(str(value) in stopped)
    return all(seen) if seen else None


def read_applied_stopped(obs: Observation) -> bool | None:
    """:func:`applied_stopped` of the provider's terraform state (None for other
    backends, or without a readable state)."""

    if obs.backend != "terraform":
        return None
    try:
        from ..settings.readers import MAX_STATE, read_json

        data = read_json(obs.dir / "terraform" / "terraform.tfstate", limit=MAX_STATE)
    except (OSError, ValueError):
        return None
    return applied_stopped(data) if isinstance(data, dict) else None


def actual_status(obs: Observation, host: HostDaemon | None, stopped: bool | None = None) -> Actual:
    """The planner's actual status. ``host``: the daemon as its host shows it (for
    daemon-level vendors; None when it was not probed). ``stopped``: whether the
    machines are stopped as last applied (:func:`read_applied_stopped`)."""
    infra = obs.infra
    claims = obs.claims
    if infra is not None and infra.lock is not None:
        return "provisioning" if infra.lock.state == "held" else "failed"
    if infra is not None and (infra.partial or infra.failed_apply is not None):
        # An apply that failed part-way is a failure to recover from, as status says.
        return "failed"
    infra_present = infra is not None and infra.present
    if not obs.adopt and not infra_present:
        return "absent"
    if stopped or (infra is not None and power_stopped(infra.outputs)):
        return "suspended"
    live = claims is not None and claims.live > 0
    if level(obs) == "infrastructure" or host is None:
        return "active"
    if host.state == "stopped":
        return "suspended"
    if host.state == "absent":
        return "active" if live else "absent"
    # running
    if live or claims is None:
        return "active"
    return "provisioning"


ShellFactory = Callable[[Any], Any]


def default_shell_factory(target: Any) -> Any:
    from ..remote import open_shell

    return open_shell(target)


def daemon_shell_target(obs: Observation) -> Any:
    """What to open a shell on for the provider's daemon: None for this machine, else
    the SSH target — the host ``connect`` recorded, else the one a person named
    (:func:`.daemon_host.where`). No host named is an error saying so."""
    from ..daemon.host import where

    found = where(obs)
    if found is None:
        from ..contract import commands
        from ..contract.errors import DreamlakeError
        from ..contract.result import Run

        raise DreamlakeError(
            f"no host is known for the daemon of '{obs.name}': connect records the host it "
            "used, and no connect has run yet. Connect it first.",
            kind="no_host",
            next_action=Run(command=commands.connect(obs.name, obs.dream_dir)),
        )
    return None if found.local else found.target


def observe_host(obs: Observation, factory: ShellFactory | None = None) -> HostDaemon | None:
    """Probe the daemon on the provider's host (daemon-level vendors only): the host
    ``connect`` recorded, else adopt.json's, else this machine (``local``). None when
    there is no host to ask (an ssh provider without a host yet)."""
    from ..daemon import key as daemon_key
    from ..daemon.host import where
    from ..daemon.suspend import daemon_state

    if level(obs) != "daemon" or obs.record is None:
        return None
    found = where(obs)
    if found is None:
        return None
    shell = (factory or default_shell_factory)(None if found.local else found.target)
    try:
        return daemon_state(shell, daemon_key.of(obs))
    finally:
        shell.close()


__all__ = [
    "Level",
    "actual_status",
    "applied_stopped",
    "daemon_shell_target",
    "default_shell_factory",
    "level",
    "observe_host",
    "power_stopped",
    "read_applied_stopped",
]
