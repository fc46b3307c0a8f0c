"""The shell interface against this machine and against a real sshd on 127.0.0.1."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from dreamlake.engine.contract.errors import RemoteError
from dreamlake.engine.remote import LocalShell, home, open_ssh, parse_host
from dreamlake.engine.remote.ssh import SSHTarget


def test_parse_host_forms() -> None:
    assert parse_host("you@ops.internal") == SSHTarget("ops.internal", "you", 22)
    assert parse_host("ops:2222", user="me") == SSHTarget("ops", "me", 2222)
    assert parse_host("ssh://a@[::1]:2200") == SSHTarget("::1", "a", 2200)
    assert parse_host("h", port=2022).port == 2022
    with pytest.raises(RemoteError):
        parse_host("bad host")
    with pytest.raises(RemoteError):
        parse_host("h:notaport")


def test_commands_for_the_agent() -> None:
    t = SSHTarget("ops.internal", "you", 2222, identity_file="/k")
    assert t.copy_id_command() == "ssh-copy-id -i /k -p 2222 you@ops.internal"
    assert "BatchMode=yes" in t.ssh_command() and "accept-new" in t.ssh_command()
    assert SSHTarget("h", "u").copy_id_command() == "ssh-copy-id u@h"


def test_local_shell_runs_with_stdin_closed(tmp_path: Path) -> None:
    sh = LocalShell()
    res = sh.run("cat; echo out; echo err >&2; exit 3")
    assert (res.returncode, res.stdout, res.stderr) == (3, "out\n", "err\n")
    dest = tmp_path / "a" / "token"
    sh.put_bytes(b"secret", str(dest), mode=0o600)
    assert dest.read_bytes() == b"secret"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert home(sh) == os.environ["HOME"]


def test_local_shell_timeout() -> None:
    with pytest.raises(RemoteError) as ei:
        LocalShell().run("sleep 5", timeout=0.3)
    assert ei.value.kind == "remote_timeout"


@pytest.mark.needs_sshd
def test_ssh_shell_runs_and_puts(sshd, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t = SSHTarget(
        sshd.host,
        sshd.user,
        sshd.port,
        identity_file=str(sshd.client_key),
        known_hosts=str(tmp_path / "kh"),
    )
    sh = open_ssh(t)
    try:
        assert home(sh) == str(sshd.home)
        res = sh.run("cat; echo hi; exit 4")  # stdin is closed: cat returns at once
        assert (res.returncode, res.stdout) == (4, "hi\n")
        dest = f"{sshd.home}/x/token"
        sh.run(f"mkdir -p {sshd.home}/x")
        sh.put_bytes(b"s3cret", dest, mode=0o600)
        assert Path(dest).read_bytes() == b"s3cret"
        assert stat.S_IMODE(Path(dest).stat().st_mode) == 0o600
    finally:
        sh.close()
    # accept-new recorded the key; a second connection checks against it.
    assert f"[{sshd.host}]:{sshd.port}" in (tmp_path / "kh").read_text()
    open_ssh(t).close()


@pytest.mark.needs_sshd
def test_ssh_wrong_key_is_refused_with_copy_id(sshd, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t = SSHTarget(
        sshd.host,
        sshd.user,
        sshd.port,
        identity_file=str(sshd.wrong_key),
        known_hosts=str(tmp_path / "kh"),
    )
    with pytest.raises(RemoteError) as ei:
        open_ssh(t)
    assert ei.value.kind == "ssh_auth"
    assert ei.value.next_action is not None
    assert ei.value.next_action.command.startswith("ssh-copy-id")
    assert ei.value.next_action.command.endswith(f"root@{sshd.host}")


@pytest.mark.needs_sshd
def test_ssh_changed_host_key_is_refused(sshd, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    kh = tmp_path / "kh"
    other = (sshd.dir / "wrong_ed25519.pub").read_text().split()
    kh.write_text(f"[{sshd.host}]:{sshd.port} {other[0]} {other[1]}\n")
    t = SSHTarget(
        sshd.host, sshd.user, sshd.port, identity_file=str(sshd.client_key), known_hosts=str(kh)
    )
    with pytest.raises(RemoteError) as ei:
        open_ssh(t)
    assert ei.value.kind == "ssh_host_key"


def test_ssh_unreachable_is_bounded(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connection refused
        t = SSHTarget(
            "127.0.0.1", "root", port, known_hosts=str(tmp_path / "kh"), connect_timeout=2
        )
        with pytest.raises(RemoteError) as ei:
            open_ssh(t)
    assert ei.value.kind == "ssh_unreachable"
