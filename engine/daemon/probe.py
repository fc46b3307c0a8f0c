"""Which supervisor runs a provider's daemon, read from the host the way ``connect``
reads it: one shell round trip asking each supervisor ``connect`` may have used
whether it runs ``nymph-<key>`` (``<key>``: the provider's identity, see
:mod:`.daemon_key`) — tmux, systemd's user and system managers; the systemd ones
only where systemd is PID 1. ``status`` reports it (``supervisor``,
``host``, and ``degraded: no-supervisor`` when tmux is all there is), as ``connect``
did. What else the host offers (``supervise.PROBE``: linger, sudo, …) matters only
when choosing a supervisor, so status does not ask it.

This machine (the ``local`` vendor) is asked on every status, and only what can
answer yes: no process at all when no tmux server listens and systemd is not PID 1
(each supervisor would say no), else a local shell with ``tmux has-session`` and,
where systemd runs, ``systemctl``. A remote host — the one ``connect`` recorded,
or adopt.json's, never one guessed from the outputs (:mod:`.daemon_host`) — is
asked only when the claims cannot answer: while a live worker claims the provider
the daemon plainly runs, and ``status`` reports the supervisor ``connect`` recorded
starting it under (``daemon.json``) with no SSH connection at all. The host is asked
— over OpenSSH in batch mode with a short connect timeout, never through the SSH
library ``connect`` uses, which ``status`` does not import — only for a live daemon
no ``connect`` recorded (installed by hand or by an older dreamlake), or within the
start window of a ``connect`` that saw no claim yet (the host is up and whether the
daemon runs decides ``connecting``).
"""

from __future__ import annotations

import os
import shlex

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from ..remote.ssh import SSHTarget
    from ..world.derive import Observation
    from .key import DaemonKey

USER_ENV = 'export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/run/user/$(id -u)}"; '
"""A user manager is reached through XDG_RUNTIME_DIR; a non-PAM ssh session may lack it."""
LOCAL_VENDORS = ("local",)
REMOTE_TIMEOUT = 8.0
CONNECT_TIMEOUT = 3


def running_script(which: DaemonKey | str, *, systemd: bool | None = None) -> str:
    """Which supervisor runs the provider's daemon now (``running_<kind>=yes`` lines):
    ``nymph-<key>``, the key its install is under (its identity, or the older name key
    while that install is its own; a plain string: that key only). ``systemd``:
    whether systemd is PID 1 there, when the caller knows (this machine); ``None``
    lets the script look (a remote host)."""
    from .key import DaemonKey

    dk = which if isinstance(which, DaemonKey) else DaemonKey(which, which)
    pick = dk.pick_script() + 'unit="nymph-$k.service"\n'
    tmux = 'tmux has-session -t "=nymph-$k" >/dev/null 2>&1 && echo running_tmux=yes\n'
    if systemd is False:
        return pick + tmux + "true\n"
    asked = (
        f'  ({USER_ENV}systemctl --user is-active --quiet "$unit") && echo running_user=yes\n'
        + '  systemctl is-active --quiet "$unit" && echo running_system=yes\n'
    )
    if systemd:
        return (
            pick + tmux + "if command -v systemctl >/dev/null 2>&1; then\n" + asked + "fi\ntrue\n"
        )
    return (
        pick
        + tmux
        + "if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then\n"
        + asked
        + "fi\ntrue\n"
    )


def parse_running(text: str) -> str | None:
    kv = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    for key, sup in (
        ("running_user", "systemd-user"),
        ("running_system", "systemd-system"),
        ("running_tmux", "tmux"),
    ):
        if kv.get(key, "").strip() == "yes":
            return sup
    return None


def observe_supervisor(obs: Observation) -> tuple[str | None, str | None, tuple[str, ...]]:
    """``(supervisor, host, degraded)`` for the provider's daemon; ``(None, None, ())``
    when there is no daemon to ask about or the host cannot be asked. Never raises."""
    try:
        return _observe(obs)
    except Exception:
        return None, None, ()


def _observe(obs: Observation) -> tuple[str | None, str | None, tuple[str, ...]]:
    if obs.record is None:
        return None, None, ()
    infra_present = obs.infra is not None and obs.infra.present and obs.infra.lock is None
    if not (infra_present or obs.adopt):
        return None, None, ()
    from .host import where
    from .key import DaemonKey

    found = where(obs)  # the host connect recorded, else one a person named
    if found is None:
        return None, None, ()
    dk = DaemonKey(obs.name, obs.record.identity(obs.dir))
    if found.local:
        systemd = os.path.isdir("/run/systemd/system")
        if not (systemd or tmux_server_up()):
            return None, None, ()  # every supervisor would say no: ask none
        from ..remote.local import LocalShell

        script = running_script(dk, systemd=systemd)
        out = LocalShell().run(script, timeout=REMOTE_TIMEOUT).stdout
        label = "localhost"
    else:
        if found.target is None:
            return None, None, ()
        live = obs.claims is not None and obs.claims.live > 0
        kept = found.supervisor
        if live and kept is not None:
            # A live claim proves the daemon runs: the host is not asked; what runs it
            # is what connect recorded starting it under.
            return kept, found.target.label, (("no-supervisor",) if kept == "tmux" else ())
        if not live and not _just_started(obs):
            return None, None, ()
        # Live, but no connect recorded what runs it (an install by hand or by an older
        # dreamlake), or just started: only the host can say.
        done = _ssh(found.target, running_script(dk))
        if done is None:
            return None, None, ()
        out, label = done, found.target.label
    sup = parse_running(out)
    if sup is None:
        return None, None, ()
    return sup, label, (("no-supervisor",) if sup == "tmux" else ())


def _just_started(obs: Observation) -> bool:
    """``connect`` started the daemon within the start window and saw no claim yet:
    the host is up and whether the daemon runs decides ``connecting``."""
    from ..world.intent import START_WINDOW

    it = obs.intent
    return (
        it is not None and it.outcome == "connecting" and 0 <= obs.now - it.started <= START_WINDOW
    )


def tmux_socket() -> str:
    """The server socket ``tmux has-session`` (without ``-L``/``-S``, as ``connect``
    starts sessions) asks on this machine: ``$TMUX``'s when inside tmux, else
    ``${TMUX_TMPDIR:-/tmp}/tmux-<uid>/default``."""
    inside = os.environ.get("TMUX")
    if inside:
        return inside.split(",")[0]
    base = os.environ.get("TMUX_TMPDIR") or "/tmp"
    return os.path.join(base, f"tmux-{os.getuid()}", "default")


def tmux_server_up() -> bool:
    """Whether a tmux server listens on :func:`tmux_socket` on this machine. No
    socket, or one nobody listens on (a server that was killed leaves it behind),
    is no server: ``tmux has-session`` would fail. Anything else (a live server,
    a socket this user may not open) is left to tmux to answer."""
    path = tmux_socket()
    if not os.path.exists(path):
        return False
    # The C module under ``socket``: the same connect and errors, without the
    # selectors, math and array that ``socket`` imports (several ms of every status).
    import _socket

    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(1.0)
        s.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError:
        return True
    finally:
        s.close()
    return True


def _ssh(target: SSHTarget, script: str) -> str | None:
    import shutil
    import subprocess

    ssh = shutil.which("ssh")
    if ssh is None:
        return None
    t = target.with_env_defaults()
    argv = [
        ssh,
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=accept-new",
        "-o", f"ConnectTimeout={CONNECT_TIMEOUT}",
    ]  # fmt: skip
    if t.known_hosts:
        argv += ["-o", f"UserKnownHostsFile={os.path.expanduser(t.known_hosts)}"]
    if t.identity_file:
        argv += ["-i", os.path.expanduser(t.identity_file), "-o", "IdentitiesOnly=yes"]
    if t.port != 22:
        argv += ["-p", str(t.port)]
    argv += [t.login, f"sh -c {shlex.quote(script)} </dev/null"]
    from ..settings.trace import traced

    try:
        with traced([*argv[:-1], "<probe>"], where=t.label) as tr:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=REMOTE_TIMEOUT,
                check=False,
            )
            tr.returncode = done.returncode
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None
