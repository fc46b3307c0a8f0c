"""Stop a provider's daemon and take its workers out of the control plane.

``stop_daemon`` is what ``destroy`` (and any verb that takes a daemon down) calls:

1. where the daemon runs: the host ``connect`` recorded (``daemon.json``), else
   ``adopt.json``'s for an adopted host, else this machine for the ``local``
   vendor — never a host guessed from the outputs (:mod:`.daemon_host`);
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

from ..contract.errors import DreamlakeError
from ..world import lakeshore
from .key import NYMPH_HOME, DaemonKey
from .probe import USER_ENV

if TYPE_CHECKING:
    from ..remote.base import Shell
    from ..world.derive import Observation

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
    reached: bool = False  # the stop ran on the host (its daemon is down there)


def daemon_target(obs: Observation) -> tuple[bool, Any] | None:
    """``(local, target)``: this machine (``(True, None)``), an SSHTarget, or None
    when no one named a host (see :func:`.daemon_host.where`: the host connect
    recorded, else adopt.json's, else this machine for ``local``; never a host
    guessed from outputs)."""
    from .host import where

    found = where(obs)
    if found is None:
        return None
    return (True, None) if found.local else (False, found.target)


def _stop_lines() -> list[str]:
    """Stop the daemon keyed ``$k`` under every supervisor: a tmux session gets Ctrl-C
    and is waited for, then closed; a systemd unit is stopped and disabled."""
    return [
        's="=nymph-$k"; unit="nymph-$k.service"',
        'if tmux has-session -t "$s" >/dev/null 2>&1; then',
        '  tmux send-keys -t "$s" C-c >/dev/null 2>&1',
        # A suspended daemon's pane is already dead (remain-on-exit): nothing to wait for.
        f'  i=0; while tmux has-session -t "$s" >/dev/null 2>&1 && [ $i -lt {int(GRACE_SECONDS * 4)} ] '
        '&& [ "$(tmux list-panes -t "$s" -F \'#{pane_dead}\' 2>/dev/null | head -n1)" != 1 ]; '
        "do sleep 0.25; i=$((i+1)); done",
        '  tmux kill-session -t "$s" >/dev/null 2>&1; echo stopped=tmux',
        "fi",
        "if command -v systemctl >/dev/null 2>&1; then",
        f'  {USER_ENV}systemctl --user is-active --quiet "$unit" 2>/dev/null && echo stopped=systemd-user',
        '  systemctl --user disable --now "$unit" >/dev/null 2>&1',
        "  if [ \"$(id -u)\" = 0 ]; then SC=systemctl; else SC='sudo -n systemctl'; fi",
        '  $SC is-active --quiet "$unit" 2>/dev/null && echo stopped=systemd-system',
        '  $SC disable --now "$unit" >/dev/null 2>&1',
        "fi",
    ]


def _unit_removal_lines() -> list[str]:
    """Remove the unit files of ``$unit`` (user and system) and reload."""
    return [
        'rm -f "$HOME/.config/systemd/user/$unit"',
        'if [ -f "/etc/systemd/system/$unit" ]; then',
        '  if [ "$(id -u)" = 0 ]; then rm -f "/etc/systemd/system/$unit"; '
        'else sudo -n rm -f "/etc/systemd/system/$unit"; fi',
        "fi",
        f"command -v systemctl >/dev/null 2>&1 && {{ {USER_ENV}systemctl --user daemon-reload; true; }} >/dev/null 2>&1",
    ]


def stop_commands(which: DaemonKey | str, *, remove: bool) -> str:
    """One shell script: Ctrl-C the tmux session and wait for it to end, then make
    sure under every supervisor; with ``remove``, delete the install and units. The
    daemon is found under its identity key, else under its older name key when that
    install is this provider's (a plain string: that key only)."""
    dk = which if isinstance(which, DaemonKey) else DaemonKey(which, which)
    lines = [dk.pick_script().rstrip("\n"), *_stop_lines()]
    if remove:
        lines += [
            f'd="{NYMPH_HOME}/$k"',
            '[ -d "$d" ] && rm -rf "$d" && echo removed=install',
            *_unit_removal_lines(),
        ]
    lines.append("true")
    return "\n".join(lines)


def move_commands(dk: DaemonKey) -> str:
    """One shell script moving this provider's name-keyed install (an older
    dreamlake's) under its identity key: its daemon stopped under the old tmux
    session / unit, the old unit files removed, the folder renamed. Another root's
    install of the same name (its ``nymph.json`` names another identity) is left
    alone. Prints ``moved=yes`` when it moved one."""
    if dk.key == dk.legacy:
        return "true"
    old = f'"{NYMPH_HOME}/{dk.legacy}"'
    new = f'"{NYMPH_HOME}/{dk.key}"'
    return "\n".join(
        [
            f"if [ -f {old}/nymph.json ] && grep -qF {shlex.quote(dk.marker())} {old}/nymph.json 2>/dev/null; then",
            f"k={shlex.quote(dk.legacy)}",
            *_stop_lines(),
            *_unit_removal_lines(),
            f"if [ -e {new} ]; then rm -rf {old}; else mv {old} {new}; fi && echo moved=yes",
            "fi",
            "true",
        ]
    )


def move_legacy(shell: Shell, dk: DaemonKey) -> str | None:
    """Run :func:`move_commands`; a note when an install was moved."""
    if dk.key == dk.legacy:
        return None
    out = shell.run(move_commands(dk), timeout=60).stdout
    if "moved=yes" not in out:
        return None
    return (
        f"✓ moved the daemon of '{dk.name}' from ~/.dreamlake/nymph/{dk.legacy} (keyed by "
        f"its name) to ~/.dreamlake/nymph/{dk.key} (keyed by its identity); its old "
        f"supervisor entry nymph-{dk.legacy} was stopped"
    )


def deregister_workers(obs: Observation) -> tuple[int, str | None]:
    """Deregister the live workers that count for this provider; (count, note)."""
    from dreamlake.controlplane.client import Client, ControlPlaneError

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
    from ..remote import open_shell
    from . import key as daemon_key

    say = progress or (lambda _m: None)
    notes: list[str] = []
    where = daemon_target(obs)
    live = obs.claims.live if obs.claims else 0
    label: str | None = None
    stopped = removed = reached = False
    # A remote host is reached only when something may run there: an adopted host
    # (the daemon is removed from it), or live workers claiming the provider.
    if where is not None and (where[0] or obs.adopt or live > 0):
        local, target = where
        label = "this machine" if local else target.label
        say(f"stopping the daemon on {label}")
        try:
            shell = (shell_factory or open_shell)(None if local else target)
        except DreamlakeError as exc:
            notes.append(f"⚠ could not reach {label} to stop the daemon: {exc.message}")
        else:
            try:
                res = shell.run(stop_commands(daemon_key.of(obs), remove=remove), timeout=60)
                out = res.stdout
                stopped = "stopped=" in out
                removed = "removed=install" in out
                reached = res.ok
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
    elif where is None and live > 0:
        from .host import unrecorded_note

        note = unrecorded_note(obs, "stopped on its machine")
        if note:
            notes.append(note)
    time.sleep(0.2 if stopped else 0)  # the daemon's own deregistration, in flight
    n, note = deregister_workers(obs)
    if note:
        notes.append(note)
    if n:
        notes.append(f"✓ deregistered {n} worker{'s' if n != 1 else ''} from the control plane")
    return StopOutcome(
        host=label,
        stopped=stopped,
        removed=removed,
        deregistered=n,
        notes=tuple(notes),
        reached=reached,
    )


__all__ = ["StopOutcome", "daemon_target", "deregister_workers", "stop_commands", "stop_daemon"]
