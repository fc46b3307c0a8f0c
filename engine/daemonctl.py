"""Stop a provider's daemon and take its workers out of the control plane.

``stop_daemon`` is what ``destroy`` (and any verb that takes a daemon down) calls:

1. where the daemon runs: ``adopt.json`` for an adopted host, this machine for the
   ``local`` vendor, else the applied ``worker_host`` output;
2. stop it under whichever supervisor runs it: a tmux session gets Ctrl-C first
   (the daemon deregisters itself on SIGINT), then is closed; a systemd unit is
   stopped (SIGTERM, the same) and disabled; with ``remove`` the install folder and
   unit files are removed too (an adopted host is left as it was found);
3. deregister, through the API, every worker of this provider's identity still
   live (a daemon killed without its signal handler never said goodbye).

A host that cannot be reached is a note, not a failure: the caller goes on (the
infrastructure is about to be destroyed anyway, and the workers are deregistered
through the control plane).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import lakeshore
from .errors import DreamlakeError
from .supervise import USER_ENV

if TYPE_CHECKING:
    from .derive import Observation
    from .remote.base import Shell

ShellFactory = Callable[[Any], "Shell"]
LOCAL_VENDORS = ("local",)
GRACE_SECONDS = 8.0


@dataclass(frozen=True)
class StopOutcome:
    """What ``stop_daemon`` did. ``host``: where it looked (None: nowhere to look)."""

    host: str | None = None
    stopped: bool = False
    removed: bool = False
    deregistered: int = 0
    notes: tuple[str, ...] = ()


def _plain(v: Any) -> Any:
    return v["value"] if isinstance(v, dict) and "value" in v else v


def daemon_target(obs: Observation) -> tuple[bool, Any] | None:
    """``(local, target)``: this machine (``(True, None)``), an SSHTarget, or None
    when the world names no host."""
    from .remote.ssh import parse_host

    if obs.record is None:
        return None
    if obs.adopt:
        # The host connect and suspend reach (adopt.json), read the one same way.
        from .lifecycle import host_target

        try:
            t = host_target(obs)
        except DreamlakeError:
            return None
        return None if t is None else (False, t)
    if obs.record.vendor in LOCAL_VENDORS:
        return True, None
    outs = {k: _plain(v) for k, v in (obs.infra.outputs if obs.infra else {}).items()}
    if outs.get("worker_host"):
        try:
            return False, parse_host(str(outs["worker_host"]), user=outs.get("worker_user") or None)
        except DreamlakeError:
            return None
    return None


def _default_factory(target: Any) -> Shell:
    from .remote import LocalShell, open_ssh

    return LocalShell() if target is None else open_ssh(target)  # type: ignore[return-value]


def stop_commands(provider: str, *, remove: bool) -> str:
    """One shell script: Ctrl-C the tmux session and wait for it to end, then make
    sure under every supervisor; with ``remove``, delete the install and units."""
    session = shlex.quote(f"={'nymph-' + provider}")
    unit = f"nymph-{provider}.service"
    lines = [
        f"if tmux has-session -t {session} >/dev/null 2>&1; then",
        f"  tmux send-keys -t {session} C-c >/dev/null 2>&1",
        # A suspended daemon's pane is already dead (remain-on-exit): nothing to wait for.
        f"  i=0; while tmux has-session -t {session} >/dev/null 2>&1 && [ $i -lt {int(GRACE_SECONDS * 4)} ] "
        f"&& [ \"$(tmux list-panes -t {session} -F '#{{pane_dead}}' 2>/dev/null | head -n1)\" != 1 ]; "
        "do sleep 0.25; i=$((i+1)); done",
        f"  tmux kill-session -t {session} >/dev/null 2>&1; echo stopped=tmux",
        "fi",
        "if command -v systemctl >/dev/null 2>&1; then",
        f"  {USER_ENV}systemctl --user is-active --quiet {unit} 2>/dev/null && echo stopped=systemd-user",
        f"  systemctl --user disable --now {unit} >/dev/null 2>&1",
        "  if [ \"$(id -u)\" = 0 ]; then SC=systemctl; else SC='sudo -n systemctl'; fi",
        f"  $SC is-active --quiet {unit} 2>/dev/null && echo stopped=systemd-system",
        f"  $SC disable --now {unit} >/dev/null 2>&1",
        "fi",
    ]
    if remove:
        d = f'"$HOME/.dreamlake/nymph/{provider}"'
        lines += [
            f"[ -d {d} ] && rm -rf {d} && echo removed=install",
            f'rm -f "$HOME/.config/systemd/user/{unit}"',
            f"if [ -f /etc/systemd/system/{unit} ]; then",
            f'  if [ "$(id -u)" = 0 ]; then rm -f /etc/systemd/system/{unit}; '
            f"else sudo -n rm -f /etc/systemd/system/{unit}; fi",
            "fi",
            f"command -v systemctl >/dev/null 2>&1 && {{ {USER_ENV}systemctl --user daemon-reload; true; }} >/dev/null 2>&1",
        ]
    lines.append("true")
    return "\n".join(lines)


def deregister_workers(obs: Observation) -> tuple[int, str | None]:
    """Deregister the live workers that count for this provider; (count, note)."""
    from ..controlplane.client import Client, ControlPlaneError

    if obs.record is None:
        return 0, None
    cp = lakeshore.resolve_control_plane(obs.dir.parent.parent.parent)
    if not cp.token:
        return 0, None
    ident = obs.record.identity(obs.dir)
    counted = set(obs.claims.instances) if obs.claims else set()
    client = Client.from_control_plane(cp, timeout=5)
    n = 0
    try:
        for w in client.workers(obs.name):
            if w.get("state") == "gone":
                continue
            mine = w.get("identity") == ident or (
                w.get("identity") is None and w.get("instanceId") in counted
            )
            if mine:
                client.deregister(str(w["workerId"]))
                n += 1
    except ControlPlaneError as exc:
        return n, f"⚠ workers not deregistered: {exc.message}"
    return n, None


def stop_daemon(
    obs: Observation,
    *,
    remove: bool = False,
    shell_factory: ShellFactory | None = None,
    progress: Callable[[str], None] | None = None,
) -> StopOutcome:
    """Stop (and with ``remove``, uninstall) the provider's daemon, then deregister
    what is left of its workers. Never raises for an unreachable host."""
    say = progress or (lambda _m: None)
    notes: list[str] = []
    where = daemon_target(obs)
    live = obs.claims.live if obs.claims else 0
    label: str | None = None
    stopped = removed = False
    # A remote host is reached only when something may run there: an adopted host
    # (the daemon is removed from it), or live workers claiming the provider.
    if where is not None and (where[0] or obs.adopt or live > 0):
        local, target = where
        label = "this machine" if local else target.label
        say(f"stopping the daemon on {label}")
        try:
            shell = (shell_factory or _default_factory)(None if local else target)
        except DreamlakeError as exc:
            notes.append(f"⚠ could not reach {label} to stop the daemon: {exc.message}")
        else:
            try:
                res = shell.run(stop_commands(obs.name, remove=remove), timeout=60)
                out = res.stdout
                stopped = "stopped=" in out
                removed = "removed=install" in out
            except (DreamlakeError, OSError, EOFError) as exc:
                notes.append(f"⚠ stopping the daemon on {label} failed: {exc}")
            finally:
                shell.close()
            if stopped:
                notes.append(f"✓ stopped the daemon of '{obs.name}' on {label}")
            if removed:
                notes.append(
                    f"✓ removed the daemon's install from {label} (the host is left as is)"
                )
    time.sleep(0.2 if stopped else 0)  # the daemon's own deregistration, in flight
    n, note = deregister_workers(obs)
    if note:
        notes.append(note)
    if n:
        notes.append(f"✓ deregistered {n} worker{'s' if n != 1 else ''} from the control plane")
    return StopOutcome(
        host=label, stopped=stopped, removed=removed, deregistered=n, notes=tuple(notes)
    )


__all__ = ["StopOutcome", "daemon_target", "deregister_workers", "stop_commands", "stop_daemon"]
