"""Start the daemon under the best supervisor a host actually has, and say which.

| on the host                                  | supervisor       | degraded        |
| -------------------------------------------- | ---------------- | --------------- |
| ``systemctl --user`` + ``loginctl`` linger   | ``systemd-user``   | —               |
| systemd + passwordless sudo (or root)        | ``systemd-system`` | —               |
| neither                                      | ``tmux``           | ``no-supervisor`` |

Detection is one probe command whose ``key=value`` output is parsed by a pure
function; the choice and the unit text are pure values too. Starting returns as
soon as ``systemctl restart`` / ``tmux new-session -d`` returns: the connection
that started the daemon never supervises it. ``tmux new-session`` has
:func:`start_timeout` seconds to return (``DREAMLAKE_DAEMON_START_TIMEOUT``, 30 by
default): a host that does not start it in that time is a ``remote_timeout``.
"""

from __future__ import annotations

import math
import os
import shlex
from dataclasses import dataclass
from typing import Literal

from ..contract.errors import RemoteError, UsageError
from ..remote.base import Shell, check
from .probe import USER_ENV  # status reads it without importing this module

Supervisor = Literal["systemd-user", "systemd-system", "tmux"]

START_TIMEOUT_ENV = "DREAMLAKE_DAEMON_START_TIMEOUT"
DEFAULT_START_TIMEOUT = 30.0


def start_timeout() -> float:
    """Seconds the daemon's start under tmux has to return on its host:
    ``DREAMLAKE_DAEMON_START_TIMEOUT``, else 30. Raises :class:`UsageError` for a
    value that is not a number of seconds above 0."""
    raw = os.environ.get(START_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_START_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (seconds > 0 and math.isfinite(seconds)):
        raise UsageError(
            f"{START_TIMEOUT_ENV}={raw!r} is not a number of seconds above 0; set it to "
            f"one, or unset it for the default ({DEFAULT_START_TIMEOUT:g})"
        )
    return seconds


PROBE = (
    USER_ENV
    + r"""
echo "user=$(id -un)"
echo "uid=$(id -u)"
[ -d /run/systemd/system ] && echo systemd=yes
if command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1; then
  echo systemd_user=yes
fi
if [ -e "/var/lib/systemd/linger/$(id -un)" ]; then echo linger=yes
elif command -v loginctl >/dev/null 2>&1 && loginctl show-user "$(id -un)" -p Linger 2>/dev/null | grep -qx 'Linger=yes'; then echo linger=yes
fi
if [ "$(id -u)" = 0 ] || sudo -n true >/dev/null 2>&1; then echo sudo=yes; fi
command -v tmux >/dev/null 2>&1 && echo tmux=yes
true
"""
)


@dataclass(frozen=True)
class Capabilities:
    """What a host offers for running a daemon, as the probe reported it."""

    user: str = ""
    uid: int = -1
    systemd: bool = False  # systemd is PID 1 (/run/systemd/system exists)
    systemd_user: bool = False  # a user manager answers systemctl --user
    linger: bool = False  # the user manager survives logout
    sudo: bool = False  # root, or sudo without a password
    tmux: bool = False

    @property
    def root(self) -> bool:
        return self.uid == 0


def parse_capabilities(text: str) -> Capabilities:
    kv = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    yes = {k for k, v in kv.items() if v.strip() == "yes"}
    try:
        uid = int(kv.get("uid", "-1"))
    except ValueError:
        uid = -1
    return Capabilities(
        user=kv.get("user", "").strip(),
        uid=uid,
        systemd="systemd" in yes,
        systemd_user="systemd_user" in yes,
        linger="linger" in yes,
        sudo="sudo" in yes,
        tmux="tmux" in yes,
    )


def choose(caps: Capabilities) -> Supervisor | None:
    """The best supervisor ``caps`` allows; None when not even tmux is there."""
    if caps.systemd_user and caps.linger:
        return "systemd-user"
    if caps.systemd and caps.sudo:
        return "systemd-system"
    if caps.tmux:
        return "tmux"
    return None


def detect(shell: Shell) -> Capabilities:
    res = shell.run(PROBE, timeout=30)
    return parse_capabilities(res.stdout)


@dataclass(frozen=True)
class DaemonSpec:
    """One provider's daemon on one host: ``run_script`` execs it in the foreground.
    ``key`` names its tmux session and systemd unit (the provider's identity, see
    :mod:`.daemon_key`; the provider's name when none is given); ``provider`` is the
    name, for prose."""

    provider: str
    run_script: str
    workdir: str
    log: str
    user: str = ""
    key: str = ""
    prefix: str = "nymph"  # of the session and unit names (the watcher's: dreamlake)
    description: str = ""  # the unit's Description (default: the daemon's)

    @property
    def session(self) -> str:
        return f"{self.prefix}-{self.key or self.provider}"

    @property
    def unit_name(self) -> str:
        return f"{self.prefix}-{self.key or self.provider}.service"


def _systemd_quote(word: str) -> str:
    """One systemd command-line word: double-quoted with \\ and \" escaped when it
    holds anything beyond a plain path (spaces, quotes, specifiers)."""
    if word and all(c.isalnum() or c in "/._-+:=@," for c in word):
        return word
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{escaped}"'


def systemd_unit(spec: DaemonSpec, *, system: bool) -> str:
    """The unit file text. ``system``: a system unit running as ``spec.user``."""
    lines = [
        "[Unit]",
        f"Description={spec.description or 'nymph daemon claiming provider ' + spec.provider}",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        f"ExecStart={_systemd_quote(str(spec.run_script))}",
        # A literal path: systemd takes no quotes here, only % needs escaping.
        f"WorkingDirectory={str(spec.workdir).replace('%', '%%')}",
        "Restart=always",
        "RestartSec=2",
        # A suspend makes the daemon exit 75 after draining: stopped, not failed,
        # and not restarted (see daemon_suspend).
        "SuccessExitStatus=75",
        "RestartPreventExitStatus=75",
    ]
    if system and spec.user:
        lines.append(f"User={spec.user}")
    lines += [
        "",
        "[Install]",
        f"WantedBy={'multi-user.target' if system else 'default.target'}",
        "",
    ]
    return "\n".join(lines)


def tmux_command(spec: DaemonSpec) -> str:
    """The shell command that (re)starts the daemon in a detached tmux session.

    A session that exists gets its pane's command replaced in place
    (``respawn-pane -k``; a suspended daemon's kept pane stops being kept). Killing
    the session first would stop the tmux server when it was the last one, and a
    ``new-session`` racing that exit fails with "server exited unexpectedly". A new
    session is tried three times for the same reason (another client may just have
    killed the server's last session)."""
    s = shlex.quote(spec.session)
    inner = f"{shlex.quote(spec.run_script)} 2>&1 | tee -a {shlex.quote(spec.log)}"
    cwd = shlex.quote(spec.workdir)
    new = f"tmux new-session -d -s {s} -c {cwd} {shlex.quote(inner)}"
    return (
        f"{{ tmux set-option -w -t ={s}: remain-on-exit off && "
        f"tmux respawn-pane -k -t ={s}: -c {cwd} {shlex.quote(inner)}; }} >/dev/null 2>&1 || "
        f"{new} || {{ sleep 0.3; {new}; }} || {{ sleep 1; {new}; }}"
    )


def _systemctl(system: bool, caps: Capabilities) -> str:
    if not system:
        return USER_ENV + "systemctl --user"
    return "systemctl" if caps.root else "sudo -n systemctl"


def _stop_elsewhere(
    shell: Shell, spec: DaemonSpec, supervisor: Supervisor, caps: Capabilities
) -> None:
    """Stop the daemon under every supervisor but ``supervisor``: a host that gained
    linger (or sudo) since the last connect must not keep the old tmux daemon beside
    the new unit, two workers claiming the provider."""
    if supervisor != "tmux":
        shell.run(f"tmux kill-session -t ={shlex.quote(spec.session)} >/dev/null 2>&1; true")
    if supervisor != "systemd-user" and caps.systemd_user:
        shell.run(f"{_systemctl(False, caps)} disable --now {spec.unit_name} >/dev/null 2>&1; true")
    if supervisor != "systemd-system" and caps.systemd and (caps.root or caps.sudo):
        shell.run(f"{_systemctl(True, caps)} disable --now {spec.unit_name} >/dev/null 2>&1; true")


def start(shell: Shell, spec: DaemonSpec, supervisor: Supervisor, caps: Capabilities) -> None:
    """(Re)start the daemon under ``supervisor``, and only there; returns once the
    start command does."""
    _stop_elsewhere(shell, spec, supervisor, caps)
    if supervisor == "tmux":
        check(
            shell,
            tmux_command(spec),
            timeout=start_timeout(),
            what=f"starting tmux session {spec.session}",
        )
        return
    system = supervisor == "systemd-system"
    text = systemd_unit(spec, system=system).encode()
    sc = _systemctl(system, caps)
    unit = spec.unit_name
    if system:
        staged = f"{spec.workdir}/{unit}"
        shell.put_bytes(text, staged, mode=0o644)
        sudo = "" if caps.root else "sudo -n "
        check(
            shell,
            f"{sudo}install -m 0644 {shlex.quote(staged)} /etc/systemd/system/{unit}",
            what=f"installing /etc/systemd/system/{unit}",
        )
    else:
        check(shell, "mkdir -p ~/.config/systemd/user", what="creating ~/.config/systemd/user")
        path = check(shell, 'printf "%s" "$HOME"').stdout.strip() + f"/.config/systemd/user/{unit}"
        shell.put_bytes(text, path, mode=0o644)
    what = "systemctl --user" if not system else "systemctl"
    check(shell, f"{sc} daemon-reload", what=f"{what} daemon-reload")
    check(
        shell,
        f"{sc} enable {unit} >/dev/null 2>&1; {sc} restart {unit}",
        what=f"{what} restart {unit}",
    )


def stop(shell: Shell, key: str) -> None:
    """Stop the daemon keyed ``key`` under whichever supervisor runs it (best effort)."""
    unit = f"nymph-{key}.service"
    session = shlex.quote(f"nymph-{key}")
    shell.run(
        f"tmux kill-session -t ={session} >/dev/null 2>&1; "
        f"if command -v systemctl >/dev/null 2>&1; then "
        f"{USER_ENV}systemctl --user disable --now {unit} >/dev/null 2>&1; "
        f'if [ "$(id -u)" = 0 ]; then systemctl disable --now {unit} >/dev/null 2>&1; '
        f"else sudo -n systemctl disable --now {unit} >/dev/null 2>&1; fi; fi; true",
        timeout=30,
    )


def running(shell: Shell, key: str, supervisor: Supervisor, caps: Capabilities) -> bool:
    """Whether the supervisor reports the daemon keyed ``key`` as running right now."""
    if supervisor == "tmux":
        return shell.run(f"tmux has-session -t ={shlex.quote('nymph-' + key)}").ok
    sc = _systemctl(supervisor == "systemd-system", caps)
    return shell.run(f"{sc} is-active --quiet nymph-{key}.service").ok


def log_tail(shell: Shell, spec: DaemonSpec, supervisor: Supervisor, lines: int = 12) -> str:
    """The last lines the daemon printed (its log file, or the journal under systemd)."""
    if supervisor == "tmux":
        cmd = f"tail -n {lines} {shlex.quote(spec.log)} 2>/dev/null"
    else:
        user = "--user " if supervisor == "systemd-user" else ""
        cmd = f"{USER_ENV}journalctl {user}-u {spec.unit_name} -n {lines} --no-pager 2>/dev/null"
    return shell.run(cmd, timeout=30).stdout.strip()


def no_supervisor_error(shell: Shell, host: str | None) -> RemoteError:
    from ..contract.result import Shell as ShellAction

    return RemoteError(
        f"{shell.label} has no supervisor the daemon can run under: no systemd user "
        "manager with linger, no systemd with passwordless sudo, and no tmux. "
        "Install tmux there (or enable linger), then re-run connect.",
        kind="no_supervisor",
        next_action=ShellAction(command="sudo apt-get install -y tmux", host=host),
    )


def describe(
    supervisor: Supervisor, spec: DaemonSpec, *, remote: bool, rerun: str | None = None
) -> list[str]:
    """Prose lines saying which supervisor runs the daemon (the tmux warning included)."""
    if supervisor == "systemd-user":
        return [
            f"supervisor: systemd user unit {spec.unit_name} (Restart=always, linger on)",
            f"logs: journalctl --user -u {spec.unit_name}",
        ]
    if supervisor == "systemd-system":
        return [
            f"supervisor: systemd unit {spec.unit_name} (Restart=always)",
            f"logs: journalctl -u {spec.unit_name}",
        ]
    ends = "your ssh session ends" if remote else "this command returns"
    return [
        f"⚠ no supervisor on this host — the daemon is running under tmux (session {spec.session})",
        f"tmux keeps it alive after {ends}.",
        "It does NOT restart it. If this daemon dies, nothing brings it back:",
        f"  {rerun or 'dreamlake provider connect -n ' + spec.provider}   # re-run to restart",
        f"attach: tmux attach -t {spec.session}   log: {spec.log}",
    ]
