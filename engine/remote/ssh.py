"""The shell of a host over SSH, through fabric (paramiko).

OpenSSH's ``-o BatchMode=yes -o StrictHostKeyChecking=accept-new`` carried over:

* batch mode: only key authentication (files and agent); no password or
  keyboard-interactive prompt is ever attempted, so nothing waits for a TTY;
* accept-new: an unknown host key is accepted and appended to ``known_hosts``;
  a *changed* key is refused;
* the TCP connect, the banner and the authentication are each bounded by
  ``connect_timeout``.

An ``isolated`` target (what the control plane opens for a tenant's provider) uses
only what the target carries: its one key file, no agent, no ``~/.ssh`` keys, no
ssh config, no environment defaults, and no ``known_hosts`` file: the host key must
be one of ``host_keys`` (known_hosts lines or bare ``TYPE BASE64`` keys, as text), or
the connection is refused.

Foreign exceptions are translated here, once, into :class:`RemoteError` with the
kinds ``ssh_auth`` (key refused: ``ssh-copy-id``), ``ssh_host_key`` (changed host
key) and ``ssh_unreachable``.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shlex
import socket
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..contract.errors import RemoteError
from ..contract.result import Shell as ShellAction
from .base import CommandResult

DEFAULT_CONNECT_TIMEOUT = 10.0
ENV_IDENTITY = "DREAMLAKE_SSH_IDENTITY_FILE"
ENV_KNOWN_HOSTS = "DREAMLAKE_SSH_KNOWN_HOSTS"


@dataclass(frozen=True)
class SSHTarget:
    """Where to ssh: ``user@host:port`` plus the key and known_hosts to use."""

    host: str
    user: str | None = None
    port: int = 22
    identity_file: str | None = None
    known_hosts: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    host_keys: str | None = None
    """The host keys to trust, as text (isolated targets only)."""
    isolated: bool = False
    """Only this target's own key and ``host_keys``: nothing of the running user's."""

    @property
    def login(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host

    @property
    def label(self) -> str:
        return self.login if self.port == 22 else f"{self.login}:{self.port}"

    def copy_id_command(self) -> str:
        port = f" -p {self.port}" if self.port != 22 else ""
        ident = f" -i {shlex.quote(self.identity_file)}" if self.identity_file else ""
        return f"ssh-copy-id{ident}{port} {self.login}"

    def ssh_command(self, remote: str = "true") -> str:
        port = f" -p {self.port}" if self.port != 22 else ""
        ident = f" -i {shlex.quote(self.identity_file)}" if self.identity_file else ""
        return (
            "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new"
            f"{ident}{port} {self.login} {shlex.quote(remote)}"
        )

    def with_env_defaults(self) -> SSHTarget:
        """Fill the key and known_hosts from ``DREAMLAKE_SSH_IDENTITY_FILE`` /
        ``DREAMLAKE_SSH_KNOWN_HOSTS`` when not set explicitly (never for an isolated
        target)."""
        if self.isolated:
            return self
        return replace(
            self,
            identity_file=self.identity_file or os.environ.get(ENV_IDENTITY) or None,
            known_hosts=self.known_hosts or os.environ.get(ENV_KNOWN_HOSTS) or None,
        )


def parse_host(spec: str, *, user: str | None = None, port: int | None = None) -> SSHTarget:
    """``[user@]host[:port]`` (also ``ssh://user@host:port``) → an SSHTarget.
    Explicit ``user`` / ``port`` fill only what ``spec`` leaves out."""
    s = spec.strip()
    if s.startswith("ssh://"):
        s = s[len("ssh://") :]
    if not s or any(c.isspace() for c in s):
        raise RemoteError(f"not a host: {spec!r} (expected [user@]host[:port])", kind="usage")
    u: str | None = None
    if "@" in s:
        u, s = s.rsplit("@", 1)
    h, p = s, None
    if s.startswith("["):  # [::1]:2222
        end = s.find("]")
        h, rest = s[1:end], s[end + 1 :]
        if rest.startswith(":"):
            p = rest[1:]
    elif s.count(":") == 1:
        h, p = s.split(":")
    try:
        port_n = int(p) if p else (port or 22)
    except ValueError:
        raise RemoteError(f"not a port in {spec!r}: {p!r}", kind="usage") from None
    if not h:
        raise RemoteError(f"not a host: {spec!r} (expected [user@]host[:port])", kind="usage")
    return SSHTarget(host=h, user=u or user, port=port_n)


def _accept_new_policy(known_hosts: Path) -> Any:
    import paramiko

    class AcceptNew(paramiko.MissingHostKeyPolicy):
        """StrictHostKeyChecking=accept-new: remember an unknown key, refuse a changed one
        (paramiko raises BadHostKeyException itself when a known key differs)."""

        def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
            client.get_host_keys().add(hostname, key.get_name(), key)
            try:
                known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                with known_hosts.open("a", encoding="utf-8") as fh:
                    fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
            except OSError:
                pass  # an unwritable known_hosts does not stop this run

    return AcceptNew()


def _pinned_keys(client: Any, t: SSHTarget) -> None:
    """Trust exactly the keys ``t.host_keys`` states (any of them, for this host: a
    pool states its hosts' keys together); refuse any other."""
    import base64
    import binascii

    import paramiko

    stated: set[tuple[str, bytes]] = set()
    for line in (t.host_keys or "").splitlines():
        fields = line.split()
        if not fields or fields[0].startswith(("#", "@")):
            continue  # comments; @revoked / @cert-authority markers are not pinned keys
        if not _is_key_type(fields[0]):
            fields = fields[1:]  # a known_hosts line: the host patterns come first
        if len(fields) < 2 or not _is_key_type(fields[0]):
            continue
        with contextlib.suppress(binascii.Error, ValueError):
            stated.add((fields[0], base64.b64decode(fields[1], validate=True)))

    class Pinned(paramiko.MissingHostKeyPolicy):
        def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
            if (key.get_name(), key.asbytes()) not in stated:
                raise paramiko.SSHException(f"{_UNPINNED} ({hostname})")

    client.set_missing_host_key_policy(Pinned())


_UNPINNED = "host key not stated"


def _is_key_type(word: str) -> bool:
    return word.startswith(("ssh-", "ecdsa-", "sk-", "rsa-"))


class SSHShell:
    """A connected host. Use :func:`open_ssh`; ``close()`` drops the connection (the
    daemon never depends on it)."""

    is_local = False

    def __init__(self, target: SSHTarget, connection: Any) -> None:
        self.target = target
        self.label = target.label
        self._c = connection

    def run(self, command: str, *, timeout: float = 60.0) -> CommandResult:
        import invoke

        from ..settings.trace import traced

        try:
            # Run under POSIX sh whatever the login shell is, with stdin closed:
            # nothing on the host can wait for input.
            with traced(command, where=self.label) as t:
                r = self._c.run(
                    f"sh -c {shlex.quote(command)} </dev/null",
                    hide=True,
                    warn=True,
                    in_stream=False,
                    pty=False,
                    timeout=timeout,
                )
                t.returncode = r.exited
        except invoke.exceptions.CommandTimedOut as exc:
            raise RemoteError(
                f"{command!r} did not finish within {timeout:.0f}s on {self.label}",
                kind="remote_timeout",
            ) from exc
        except (OSError, EOFError) as exc:
            raise _unreachable(self.target, exc) from exc
        return CommandResult(command, r.exited, r.stdout, r.stderr)

    def _sftp(self) -> Any:
        try:
            return self._c.sftp()
        except Exception as exc:
            raise RemoteError(
                f"no SFTP on {self.label}: {exc}. The host's sshd needs its sftp subsystem "
                "enabled to receive the daemon.",
                kind="remote_command",
            ) from exc

    def _tmp(self, remote_path: str) -> str:
        d, n = posixpath.split(remote_path)
        return posixpath.join(d, f".{n}.{uuid.uuid4().hex[:8]}")

    def _finish(self, tmp: str, remote_path: str, mode: int) -> None:
        sftp = self._sftp()
        sftp.chmod(tmp, mode)
        try:
            sftp.posix_rename(tmp, remote_path)
        except OSError:
            res = self.run(f"mv -f {shlex.quote(tmp)} {shlex.quote(remote_path)}")
            if not res.ok:
                raise RemoteError(
                    f"could not write {remote_path} on {self.label}: {res.tail()}"
                ) from None

    def _abs(self, remote_path: str) -> str:
        if remote_path.startswith("~/"):
            remote_path = remote_path[2:]  # sftp paths are relative to the login's home
        return remote_path

    def put_bytes(self, data: bytes, remote_path: str, *, mode: int = 0o644) -> None:
        path = self._abs(remote_path)
        tmp = self._tmp(path)
        sftp = self._sftp()
        # Create with a private mode first so a secret is never briefly world-readable.
        with sftp.open(tmp, "wb") as fh:
            fh.chmod(0o600)
            fh.write(data)
        self._finish(tmp, path, mode)

    def put_file(self, local_path: str, remote_path: str, *, mode: int = 0o644) -> None:
        path = self._abs(remote_path)
        tmp = self._tmp(path)
        self._sftp().put(local_path, tmp)
        self._finish(tmp, path, mode)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._c.close()


def _reason(t: SSHTarget, exc: BaseException) -> str:
    from paramiko.ssh_exception import NoValidConnectionsError

    if isinstance(exc, NoValidConnectionsError):
        return f"connection refused on port {t.port}"
    if isinstance(exc, TimeoutError):
        return f"no answer within {t.connect_timeout:.0f}s"
    if isinstance(exc, socket.gaierror):
        return f"unknown host name {t.host!r}"
    text = str(exc).replace("[Errno None] ", "").strip()
    return text or type(exc).__name__


def _unreachable(t: SSHTarget, exc: BaseException) -> RemoteError:
    # The suggested command runs here (it is ssh itself), so the action names no host.
    return RemoteError(
        f"cannot reach {t.label} over ssh: {_reason(t, exc)}. "
        "Check the host name, the port and that sshd is running.",
        kind="ssh_unreachable",
        next_action=ShellAction(command=t.ssh_command("true")),
    )


def open_ssh(target: SSHTarget) -> SSHShell:
    """Connect (BatchMode, accept-new, bounded) and return the shell, or raise RemoteError."""
    import fabric
    import paramiko

    t = target.with_env_defaults()
    known = Path(os.path.expanduser(t.known_hosts or "~/.ssh/known_hosts"))
    connect_kwargs: dict[str, Any] = {
        "allow_agent": not t.isolated,
        "look_for_keys": t.identity_file is None and not t.isolated,
        "banner_timeout": t.connect_timeout,
        "auth_timeout": t.connect_timeout,
        "channel_timeout": t.connect_timeout,
    }
    if t.identity_file:
        connect_kwargs["key_filename"] = [os.path.expanduser(t.identity_file)]
    if t.isolated:
        connect_kwargs["key_filename"] = [t.identity_file] if t.identity_file else []
    extra: dict[str, Any] = {}
    if t.isolated:  # no ~/.ssh/config, /etc/ssh/ssh_config or fabric config file
        extra["config"] = fabric.Config(ssh_config=paramiko.SSHConfig(), lazy=True)
    conn = fabric.Connection(
        t.host,
        user=t.user,
        port=t.port if t.port != 22 or t.isolated else None,  # 22: ~/.ssh/config may say
        connect_timeout=int(max(1, t.connect_timeout)),
        connect_kwargs=connect_kwargs,
        **extra,
    )
    client = conn.client
    if t.isolated:
        _pinned_keys(client, t)
    else:
        if known.is_file():
            with contextlib.suppress(OSError, paramiko.SSHException):
                client.load_host_keys(str(known))
        client.set_missing_host_key_policy(_accept_new_policy(known))
    try:
        conn.open()
    except paramiko.BadHostKeyException as exc:
        if t.isolated:
            raise _unpinned(t) from exc
        raise RemoteError(
            f"the host key of {t.label} changed since it was recorded in {known} — "
            "refusing to connect. If the host was rebuilt, remove the old key and re-run.",
            kind="ssh_host_key",
            next_action=ShellAction(
                command=f"ssh-keygen -f {shlex.quote(str(known))} -R "
                + shlex.quote(t.host if t.port == 22 else f"[{t.host}]:{t.port}"),
            ),
        ) from exc
    except (paramiko.AuthenticationException, paramiko.PasswordRequiredException) as exc:
        which = f" ({t.identity_file})" if t.identity_file and not t.isolated else ""
        raise RemoteError(
            f"{t.label} refused the ssh key{which}: key authentication failed and "
            "no password prompt is ever tried. Install your public key on the host, then re-run.",
            kind="ssh_auth",
            next_action=ShellAction(command=t.copy_id_command()),
        ) from exc
    except (TimeoutError, OSError, EOFError, paramiko.SSHException) as exc:
        if t.isolated and _UNPINNED in str(exc):
            raise _unpinned(t) from exc
        raise _unreachable(t, exc) from exc
    return SSHShell(t, conn)


def _unpinned(t: SSHTarget) -> RemoteError:
    stated = "is not one of the host keys stated" if t.host_keys else "is not stated"
    return RemoteError(
        f"the host key of {t.label} {stated} — refusing to connect. State the host's "
        "public key as text (ssh-keyscan prints it) in the provider's host_key.",
        kind="ssh_host_key",
        next_action=ShellAction(
            command="ssh-keyscan " + (f"-p {t.port} " if t.port != 22 else "") + shlex.quote(t.host)
        ),
    )
