"""``dreamlake provider watch --install``: the watcher under the supervisor ladder the
daemon uses (``engine/daemon/start.py``): a systemd user unit where the user manager
runs with linger, a system unit where systemd and passwordless sudo are, else a
detached tmux session (which keeps it running but does not restart it).

What runs is ``.dream/watch.sh``: the same ``dreamlake provider watch`` with the
flags given, for this root, with the control-plane settings of this environment
(``LAKESHORE_URL`` …; never ``LAKESHORE_TOKEN`` itself: a token is read from the
file ``LAKESHORE_TOKEN_FILE`` or ``.dreamrc`` name). Installing again restarts it.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
import time
from typing import Any

from ..contract import commands
from ..contract.errors import DreamlakeError
from ..contract.result import Run
from ..world.paths import Root, check_name

SCRIPT = "watch.sh"
LOG = "watch.log"
KEPT_ENV = (
    "PATH",
    "LAKESHORE_URL",
    "LAKESHORE_NAMESPACE",
    "LAKESHORE_TOKEN_FILE",
    "LAKESHORE_CA",
    "LAKESHORE_DATA_DIR",
    "DREAMRC",
    "DREAMLAKE_TEMPLATE_PATH",
    "TF_CLI_CONFIG_FILE",
)


def watch_key(root: Root) -> str:
    """The supervisor entry's name for this root: ``dreamlake-watch-<hash of the root>``."""
    return "watch-" + hashlib.sha256(str(root.path).encode()).hexdigest()[:12]


def watcher_spec(root: Root, user: str) -> Any:
    """What the supervisor runs for this root's watcher (a ``DaemonSpec``): the script,
    the root as its folder, its log, and the entry ``dreamlake-watch-<hash>``."""
    from ..daemon import start as supervise

    return supervise.DaemonSpec(
        provider=str(root.path),
        run_script=str(root.dream / SCRIPT),
        workdir=str(root.path),
        log=str(root.dream / LOG),
        user=user,
        key=watch_key(root),
        prefix="dreamlake",
        description=f"dreamlake provider watch on {root.path}",
    )


def script_text(root: Root, argv: list[str], env: dict[str, str]) -> str:
    """The script the supervisor runs: the environment kept, then the watcher, exec'd."""
    lines = [
        "#!/bin/sh",
        "# dreamlake provider watch --install wrote this; installing again rewrites it",
    ]
    lines += [f"export {k}={shlex.quote(env[k])}" for k in KEPT_ENV if env.get(k)]
    cmd = [sys.executable, "-m", "dreamlake.cli.main", "provider", "watch", *argv]
    lines.append(f"cd {shlex.quote(str(root.path))} && exec {shlex.join(cmd)}")
    return "\n".join(lines) + "\n"


def _argv(
    names: list[str] | None, all_providers: bool, root: Root, interval: float, drift: float
) -> list[str]:
    if (names and all_providers) or not (names or all_providers):
        from ..contract.errors import UsageError

        raise UsageError("say which providers to watch: -n NAME (repeatable) or --all")
    which = ["--all"] if all_providers else [a for n in names or [] for a in ("-n", check_name(n))]
    return [*which, "--interval", f"{interval:g}", "--drift-interval", f"{drift:g}",
            "--dream-dir", str(root.path)]  # fmt: skip


def _running(shell: Any, spec: Any, sup: str, caps: Any) -> bool:
    """Whether the supervisor runs this root's installed watcher now."""
    if sup == "tmux":
        return bool(shell.run(f"tmux has-session -t ={shlex.quote(spec.session)}").ok)
    from ..daemon.probe import USER_ENV

    sc = USER_ENV + "systemctl --user" if sup == "systemd-user" else "sudo -n systemctl"
    if sup == "systemd-system" and caps.root:
        sc = "systemctl"
    return bool(shell.run(f"{sc} is-active --quiet {spec.unit_name}").ok)


def install_watcher(
    *,
    names: list[str] | None,
    all_providers: bool,
    dream_dir: str | None,
    interval: float,
    drift_interval: float,
    wait: float = 30.0,
) -> dict[str, Any]:
    """Write the script, start it under the best supervisor this machine has, and
    wait (up to ``wait`` s) until it holds the root's lock (on a re-install, until the
    new process holds it, not the one being replaced). Raises ``WatcherRunning``
    when a watcher not started by this install holds the root."""
    from ..daemon import start as supervise
    from ..remote.local import LocalShell
    from ..settings.fsutil import atomic_write
    from ..verbs._common import root_for
    from .lock import WatchLock, held_by, lock_path

    root = root_for(dream_dir, None)
    argv = _argv(names, all_providers, root, interval, drift_interval)
    shell = LocalShell()
    caps = supervise.detect(shell)
    sup = supervise.choose(caps)
    if sup is None:
        raise supervise.no_supervisor_error(shell, None)
    spec = watcher_spec(root, caps.user)
    before = held_by(lock_path(root.dream))
    replaced = before.pid if before is not None else None
    if not _running(shell, spec, sup, caps):
        # Not a re-install: a watcher holding the root now was started by hand, and
        # the installed one could not take it.
        lock = WatchLock(root.dream)
        try:
            lock.acquire(commands.list_(dream_dir))
        finally:
            lock.release()
    root.dream.mkdir(parents=True, exist_ok=True)
    atomic_write(root.dream / SCRIPT, script_text(root, argv, dict(os.environ)), mode=0o700)
    supervise.start(shell, spec, sup, caps)
    holder = None
    deadline = time.monotonic() + wait
    while holder is None and time.monotonic() < deadline:
        holder = held_by(lock_path(root.dream))
        if holder is None or holder.pid is None or holder.pid == replaced:
            holder = None
            time.sleep(0.1)
    if holder is None:
        tail = supervise.log_tail(shell, spec, sup)
        raise DreamlakeError(
            f"the watcher was started under {sup} but did not take the root's lock within "
            f"{wait:g}s" + (f"; its log says:\n{tail}" if tail else ""),
            kind="watch_start_failed",
            next_action=Run(command=commands.list_(dream_dir)),
        )
    lines = [f"✓ the watcher runs under {sup}: {holder.describe()}"]
    lines += supervise.describe(sup, spec, remote=False, rerun="dreamlake provider watch --install")
    if os.environ.get("LAKESHORE_TOKEN"):
        lines.append(
            "⚠ LAKESHORE_TOKEN is not written to disk: the watcher reads its token from "
            "LAKESHORE_TOKEN_FILE or the token_file .dreamrc names"
        )
    return {
        "supervisor": sup,
        "unit": spec.unit_name if sup != "tmux" else None,
        "session": spec.session if sup == "tmux" else None,
        "script": str(root.dream / SCRIPT),
        "log": str(root.dream / LOG),
        "holder": holder.to_wire(),
        "lines": lines,
    }


__all__ = ["install_watcher", "script_text", "watch_key", "watcher_spec"]
