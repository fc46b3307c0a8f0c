"""Suspend and resume a provider's daemon on its host, under the supervisor that runs it.

What the host shows, read by one probe (:func:`daemon_state`):

==============================================  ===========
on the host                                     state
==============================================  ===========
tmux pane alive / systemd unit active            ``running``
tmux session kept with its pane dead /          ``stopped`` (suspended: the daemon
systemd unit enabled but inactive                is gone, its supervisor entry kept)
no session, no unit                             ``absent``
==============================================  ===========

``installed`` says whether ``run.sh`` is still there and ``workdir_ok`` whether the
daemon's work directory still exists: a resume needs both (the state it kept).

Suspend (:func:`suspend_daemon`): keep the tmux session when the daemon exits
(``remain-on-exit``), send the daemon SIGUSR1 — it stops taking work, lets the
running item finish, deregisters and exits — and wait. After ``timeout`` seconds a
SIGTERM cuts the running item short (it is reported failed, as a stop does).
Under systemd the unit is then stopped but stays enabled.

Resume (:func:`resume_daemon`): start the same ``run.sh`` under the same supervisor
(``tmux respawn-pane`` / ``systemctl start``), so the same instance id claims; a
session killed behind our back is recreated under the best supervisor the host has.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

from ..contract.errors import RemoteError
from ..remote.base import Shell, check
from .key import NYMPH_HOME, DaemonKey
from .start import USER_ENV

DaemonState = Literal["running", "stopped", "absent"]
DRAIN_KILL_GRACE = 10.0  # seconds after the SIGTERM before a SIGKILL


@dataclass(frozen=True)
class HostDaemon:
    """The provider's daemon as its host shows it."""

    state: DaemonState
    supervisor: str | None  # tmux, systemd-user, systemd-system, or None when absent
    install_dir: str
    installed: bool  # run.sh is there
    workdir: str
    workdir_ok: bool
    pid: int | None = None
    key: str = ""  # the key its install is under (the identity, or an older name key)

    @property
    def recoverable(self) -> bool:
        return self.installed and self.workdir_ok


KeyLike = DaemonKey | str


def _dk(which: KeyLike) -> DaemonKey:
    """A :class:`DaemonKey`; a plain string is a key with no older install to look for."""
    return which if isinstance(which, DaemonKey) else DaemonKey(which, which)


def _probe(which: KeyLike) -> str:
    dk = _dk(which)
    return (
        USER_ENV
        + dk.pick_script()
        + f"""d="{NYMPH_HOME}/$k"
s="nymph-$k"
unit="nymph-$k.service"
echo "key=$k"
echo "dir=$d"
[ -x "$d/run.sh" ] && echo installed=yes
wd=$(sed -n 's/^ *"workdir": *"\\(.*\\)",\\{{0,1\\}}$/\\1/p' "$d/nymph.json" 2>/dev/null | head -n1)
[ -n "$wd" ] || wd="$d"
echo "workdir=$wd"
[ -d "$wd" ] && echo workdir_ok=yes
[ -f "$d/nymph.pid" ] && echo "pid=$(cat "$d/nymph.pid")"
if command -v tmux >/dev/null 2>&1 && tmux has-session -t "=$s" 2>/dev/null; then
  echo "tmux_dead=$(tmux list-panes -t "=$s" -F '#{{pane_dead}}' 2>/dev/null | head -n1)"
fi
if command -v systemctl >/dev/null 2>&1; then
  if systemctl --user is-enabled "$unit" >/dev/null 2>&1; then
    echo "systemd_user=$(systemctl --user is-active "$unit" 2>/dev/null)"
  fi
  if systemctl is-enabled "$unit" >/dev/null 2>&1; then
    echo "systemd_system=$(systemctl is-active "$unit" 2>/dev/null)"
  fi
fi
true
"""
    )


def parse_probe(text: str) -> HostDaemon:
    """The probe's ``key=value`` lines → a :class:`HostDaemon` (pure)."""
    kv = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    state: DaemonState = "absent"
    supervisor: str | None = None
    if "tmux_dead" in kv:
        supervisor = "tmux"
        state = "stopped" if kv["tmux_dead"].strip() == "1" else "running"
    for key, name in (("systemd_user", "systemd-user"), ("systemd_system", "systemd-system")):
        if key in kv and state != "running":
            supervisor = name
            active = kv[key].strip() in ("active", "activating", "reloading")
            state = "running" if active else "stopped"
    pid: int | None = None
    try:
        pid = int(kv.get("pid", "").strip())
    except ValueError:
        pid = None
    return HostDaemon(
        state=state,
        supervisor=supervisor,
        install_dir=kv.get("dir", "").strip(),
        installed=kv.get("installed", "").strip() == "yes",
        workdir=kv.get("workdir", "").strip(),
        workdir_ok=kv.get("workdir_ok", "").strip() == "yes",
        pid=pid,
        key=kv.get("key", "").strip(),
    )


def daemon_state(shell: Shell, which: KeyLike) -> HostDaemon:
    """How the provider's daemon stands on ``shell``'s host (one command): under its
    identity key, else under its older name key when that install is its own."""
    return parse_probe(shell.run(_probe(which), timeout=30).stdout)


def _systemctl(supervisor: str) -> str:
    if supervisor == "systemd-user":
        return USER_ENV + 'systemctl --user "$@"'
    return 'if [ "$(id -u)" = 0 ]; then systemctl "$@"; else sudo -n systemctl "$@"; fi'


def suspend_daemon(
    shell: Shell, which: KeyLike, *, timeout: float = 300.0, before: HostDaemon | None = None
) -> HostDaemon:
    """Stop the daemon gracefully (drain, deregister, exit) and keep its supervisor
    entry, so it can be resumed. Returns the state after. Idempotent. ``before``: the
    state just probed, if the caller has it (one probe fewer)."""
    dk = _dk(which)
    provider = dk.name
    before = before or daemon_state(shell, dk)
    if before.state != "running":
        return before
    key = before.key or dk.key
    if before.pid is None:
        raise RemoteError(
            f"the daemon for {provider!r} on {shell.label} has no pid file (it was installed "
            "by an older dreamlake) and cannot be suspended gracefully. Re-run connect to "
            "refresh it, then suspend.",
            kind="suspend_unsupported",
        )
    s = shlex.quote(f"nymph-{key}")
    pid = before.pid
    keep = (
        f"tmux set-option -w -t ={s}: remain-on-exit on >/dev/null 2>&1; "
        if before.supervisor == "tmux"
        else ""
    )
    wait = max(0, int(timeout * 10))
    grace = int(DRAIN_KILL_GRACE * 10)
    script = (
        keep
        + f"kill -USR1 {pid} 2>/dev/null || true; "
        + f"i=0; while kill -0 {pid} 2>/dev/null && [ $i -lt {wait} ]; do sleep 0.1; i=$((i+1)); done; "
        + f"if kill -0 {pid} 2>/dev/null; then kill -TERM {pid}; echo cut=yes; "
        + f"i=0; while kill -0 {pid} 2>/dev/null && [ $i -lt {grace} ]; do sleep 0.1; i=$((i+1)); done; "
        + f"kill -KILL {pid} 2>/dev/null; fi; true"
    )
    shell.run(script, timeout=timeout + DRAIN_KILL_GRACE + 30)
    if before.supervisor in ("systemd-user", "systemd-system"):
        unit = f"nymph-{key}.service"
        shell.run(f"sc() {{ {_systemctl(before.supervisor)}; }}; sc stop {unit}; true", timeout=60)
    return daemon_state(shell, dk)


class Unrecoverable(RemoteError):
    """Resume found no state to resume from (the install or the work directory is gone)."""


def _inner(install_dir: str) -> str:
    """The pane's command: the same one ``supervise.tmux_command`` starts."""
    run, log = f"{install_dir}/run.sh", f"{install_dir}/nymph.log"
    return f"{shlex.quote(run)} 2>&1 | tee -a {shlex.quote(log)}"


def resume_daemon(
    shell: Shell, which: KeyLike, *, run: bool = True, before: HostDaemon | None = None
) -> tuple[HostDaemon, str]:
    """Start the suspended daemon again under its supervisor; returns the state after
    and the supervisor. Raises :class:`Unrecoverable` when its state is gone.

    ``run=False`` restores the *suspended* form only (the target is still
    ``suspended`` but the supervisor entry was lost, e.g. its tmux session killed):
    the state is checked and the entry re-created, stopped, without running the
    daemon — it must not take work while suspended."""
    from . import start as supervise

    dk = _dk(which)
    provider = dk.name
    before = before or daemon_state(shell, dk)
    key = before.key or dk.key
    if before.state == "running" or (before.state == "stopped" and not run):
        return before, before.supervisor or "tmux"
    if not before.recoverable:
        what = (
            f"the daemon's install {before.install_dir} is gone"
            if not before.installed
            else f"its work directory {before.workdir} is gone"
        )
        raise Unrecoverable(
            f"cannot resume {provider!r} on {shell.label}: {what}, so the state it kept is lost.",
            kind="unrecoverable",
        )
    s = shlex.quote(f"nymph-{key}")
    d = before.install_dir
    sup = before.supervisor
    if sup == "tmux" and before.state == "stopped":
        check(
            shell,
            f"tmux respawn-pane -t ={s}: {shlex.quote(_inner(d))} && "
            f"tmux set-option -w -t ={s}: remain-on-exit off",
            what=f"restarting tmux session nymph-{key}",
        )
        return daemon_state(shell, dk), "tmux"
    if sup in ("systemd-user", "systemd-system"):
        unit = f"nymph-{key}.service"
        check(
            shell,
            f"sc() {{ {_systemctl(sup)}; }}; sc {'start' if run else 'enable'} {unit}",
            what=f"systemctl start {unit}",
        )
        return daemon_state(shell, dk), sup
    # The supervisor entry is gone (a tmux session killed behind our back): start the
    # same run.sh under the best supervisor the host has.
    caps = supervise.detect(shell)
    chosen = supervise.choose(caps)
    if chosen is None:
        raise supervise.no_supervisor_error(shell, None)
    if not run:
        if chosen != "tmux":
            # A unit that was removed: it comes back (stopped) with the next resume.
            return before, chosen
        check(
            shell,
            f"tmux new-session -d -s {s} -c {shlex.quote(d)} && "
            f"tmux set-option -w -t ={s}: remain-on-exit on && "
            f"tmux respawn-pane -k -t ={s}: true",
            what=f"restoring the suspended tmux session nymph-{key}",
        )
        return daemon_state(shell, dk), "tmux"
    spec = supervise.DaemonSpec(
        provider=provider,
        key=key,
        run_script=f"{d}/run.sh",
        workdir=d,
        log=f"{d}/nymph.log",
        user=caps.user,
    )
    supervise.start(shell, spec, chosen, caps)
    return daemon_state(shell, dk), chosen


__all__ = [
    "DaemonState",
    "HostDaemon",
    "Unrecoverable",
    "daemon_state",
    "parse_probe",
    "resume_daemon",
    "suspend_daemon",
]
