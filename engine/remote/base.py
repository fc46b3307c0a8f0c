"""One shell interface for this machine and for a host over SSH.

The engine installs and supervises the daemon through :class:`Shell` only, so the
same supervisor logic runs locally (the ``local`` vendor) and remotely (``ssh``).
Every command runs with stdin closed and under a timeout: nothing waits for a TTY.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Protocol

from ..contract.errors import RemoteError


@dataclass(frozen=True)
class CommandResult:
    command: str
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, lines: int = 8) -> str:
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return "\n".join(text[-lines:])


class Shell(Protocol):
    """A POSIX shell somewhere. ``label`` names it in prose (``root@host:2222`` or
    ``this machine``); ``is_local`` says whether no network sits in between."""

    label: str
    is_local: bool

    def run(self, command: str, *, timeout: float = 60.0) -> CommandResult:
        """Run ``command`` with ``sh -c``; never raises on a non-zero exit."""
        ...

    def put_bytes(self, data: bytes, remote_path: str, *, mode: int = 0o644) -> None:
        """Write ``data`` to ``remote_path`` atomically (temp + rename) with ``mode``."""
        ...

    def put_file(self, local_path: str, remote_path: str, *, mode: int = 0o644) -> None:
        """Copy a local file to ``remote_path`` atomically with ``mode``."""
        ...

    def close(self) -> None: ...


def check(shell: Shell, command: str, *, timeout: float = 60.0, what: str = "") -> CommandResult:
    """Run ``command`` and raise a RemoteError naming ``what`` when it fails."""
    res = shell.run(command, timeout=timeout)
    if not res.ok:
        detail = res.tail()
        raise RemoteError(
            f"{what or command} failed on {shell.label} (exit {res.returncode})"
            + (f": {detail}" if detail else ""),
            kind="remote_command",
        )
    return res


def home(shell: Shell) -> str:
    """The login user's home directory on the shell's host."""
    out = check(shell, 'printf "%s" "$HOME"', what="reading $HOME").stdout.strip()
    if not out.startswith("/"):
        raise RemoteError(f"$HOME on {shell.label} is not an absolute path: {out!r}")
    return out


def q(s: str) -> str:
    return shlex.quote(s)
