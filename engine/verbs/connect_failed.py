"""What to do when connecting to a host fails part-way.

A next action must change something: running connect again against the same host,
unchanged, fails the same way. A daemon that exits at start needs its host repaired
(what it printed says how): a person's step, flagged. A host that hangs or drops the
connection is checked, or another one is named (``adopt.json``, or ``--host``).
Standard library only.
"""

from __future__ import annotations

import shlex

from ..contract import commands
from ..contract.result import EditThenContinue, Run, Shell
from ..world.paths import ProviderPaths

REMOTE_KINDS = ("remote_timeout", "remote_io")
"""The kinds whose next action :func:`host_failed` names."""


def daemon_log_command(log: str, lines: int = 50) -> str:
    """The command that shows what the daemon printed (on its host)."""
    return f"tail -n {lines} {shlex.quote(log)}"


def daemon_exited(label: str, log: str, *, local: bool, rerun: str) -> tuple[Shell, str]:
    """The next action for a daemon that exited right after it was started: read
    its log on the host and repair what it says (a person's step), then ``rerun``."""
    look = daemon_log_command(log)
    return (
        Shell(command=look, host=None if local else label, approval=True),
        f"repairing {label} so the daemon runs is a person's step: read its log "
        f"({look}{'' if local else f' on {label}'}), fix what it says there (its python3, "
        f"its disk, its permissions), then re-run {rerun}",
    )


def host_failed(
    paths: ProviderPaths, name: str, dream_dir: str | None, host: str | None
) -> tuple[EditThenContinue | Run, str]:
    """The next action for a host that hung or dropped the connection part-way:
    where the host is the person's (adopt.json), correct it there or name another
    with ``--host``; otherwise look at what ``status`` says of the host first."""
    again = commands.connect(name, dream_dir)
    if paths.adopt_json.is_file():
        return (
            EditThenContinue(file=str(paths.adopt_json), command=again),
            f"check that {host or 'the host'} answers over ssh and is not overloaded; "
            f"if it moved or another should run the daemon, set host (and port) in "
            f"{paths.adopt_json} or pass --host, then re-run {again}",
        )
    return (
        Run(command=commands.status(name, dream_dir)),
        "check that the host answers and is not overloaded (status reads what it can "
        f"of it) before re-running {again}",
    )


__all__ = ["REMOTE_KINDS", "daemon_exited", "daemon_log_command", "host_failed"]
