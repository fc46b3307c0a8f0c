"""Shells the engine acts through: this machine (:class:`LocalShell`) or a host over
SSH (:class:`SSHShell`, fabric imported only when connecting)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import CommandResult, Shell, check, home, q
from .local import LocalShell

if TYPE_CHECKING:
    from .ssh import SSHShell, SSHTarget


def open_ssh(target: SSHTarget) -> SSHShell:
    from .ssh import open_ssh as _open

    return _open(target)


def open_shell(target: SSHTarget | None) -> Shell:
    """A shell on ``target``: this machine for None, else SSH."""
    return LocalShell() if target is None else open_ssh(target)  # type: ignore[return-value]


def parse_host(spec: str, *, user: str | None = None, port: int | None = None) -> SSHTarget:
    from .ssh import parse_host as _parse

    return _parse(spec, user=user, port=port)


__all__ = [
    "CommandResult",
    "LocalShell",
    "Shell",
    "check",
    "home",
    "open_shell",
    "open_ssh",
    "parse_host",
    "q",
]
