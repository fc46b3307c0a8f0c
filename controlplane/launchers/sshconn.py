"""Opening an SSH session server-side with the engine's own shell (BatchMode,
accept-new, bounded): the key comes from a ``private_key`` secret, written for the
length of the session to a 0600 file in a private temporary folder, then removed."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

from .errors import LaunchRejected


def hosts(kwargs: Mapping[str, Any]) -> list[str]:
    """``hosts`` (a pool) or ``host``."""
    pool = kwargs.get("hosts")
    if isinstance(pool, list) and pool:
        return [str(h) for h in pool]
    if isinstance(kwargs.get("host"), str) and kwargs["host"]:
        return [kwargs["host"]]
    raise LaunchRejected("this provider needs a host (or a hosts list) kwarg")


def label(kwargs: Mapping[str, Any], host: str) -> str:
    from ...engine.remote import parse_host

    port = kwargs.get("port") if isinstance(kwargs.get("port"), int) else None
    return parse_host(host, user=kwargs.get("user") or None, port=port).label


@contextlib.contextmanager
def session(kwargs: Mapping[str, Any], host: str) -> Iterator[Any]:
    from dreamlake.engine.contract.errors import RemoteError

    from ...engine.remote import open_ssh, parse_host
    from ...engine.remote.ssh import SSHTarget

    port = kwargs.get("port") if isinstance(kwargs.get("port"), int) else None
    target = parse_host(host, user=kwargs.get("user") or None, port=port)
    key = kwargs.get("private_key")
    with tempfile.TemporaryDirectory(prefix="lakeshore-ssh-") as tmp:
        ident = kwargs.get("key_file") if isinstance(kwargs.get("key_file"), str) else None
        if key is not None:
            if not isinstance(key, str) or "PRIVATE KEY" not in key:
                raise LaunchRejected("private_key must reference an ssh_key secret (a private key)")
            ident = os.path.join(tmp, "id")
            fd = os.open(ident, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(key if key.endswith("\n") else key + "\n")
        known = kwargs.get("known_hosts") if isinstance(kwargs.get("known_hosts"), str) else None
        target = SSHTarget(
            target.host, target.user, target.port, identity_file=ident, known_hosts=known
        )
        try:
            shell = open_ssh(target)
        except RemoteError as exc:
            if exc.kind in ("ssh_auth", "ssh_host_key"):
                raise LaunchRejected(str(exc)) from None
            raise
        try:
            yield shell
        finally:
            shell.close()
