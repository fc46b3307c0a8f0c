"""Opening an SSH session server-side with the engine's own shell, isolated: the key
comes only from a ``private_key`` secret (written for the length of the session to a
0600 file in a private temporary folder, then removed), the host key only from the
``host_key`` kwarg's text. Never a file on the server, its agent, its own keys, its
ssh config or its ``known_hosts``: a host whose key is not stated is refused."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

from ..registry.server_files import FILE_KWARGS
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
    for field in FILE_KWARGS["SSH"]:
        if kwargs.get(field) is not None:
            raise LaunchRejected(
                f"kwargs.{field} names a file on the server, which a launch never reads: "
                'put the key in a secret (private_key={"$secret": NAME}) and the host key '
                "as text in host_key"
            )
    key = kwargs.get("private_key")
    if key is None:
        raise LaunchRejected(
            "this provider has no private_key: a launch logs in only with a key from a secret "
            '(private_key={"$secret": NAME} of kind ssh_key), never with the server\'s own keys'
        )
    host_keys = kwargs.get("host_key")
    if host_keys is not None and not isinstance(host_keys, str):
        raise LaunchRejected("host_key must be the host's public key(s) as text (ssh-keyscan)")
    with tempfile.TemporaryDirectory(prefix="lakeshore-ssh-") as tmp:
        if not isinstance(key, str) or "PRIVATE KEY" not in key:
            raise LaunchRejected("private_key must reference an ssh_key secret (a private key)")
        ident = os.path.join(tmp, "id")
        fd = os.open(ident, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(key if key.endswith("\n") else key + "\n")
        target = SSHTarget(
            target.host,
            target.user,
            target.port,
            identity_file=ident,
            host_keys=host_keys,
            isolated=True,
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
