"""``connect`` gives a daemon only a token minted for it: never the caller's own
(admin) token, and when minting fails it fails before anything is installed. Real
control plane on 127.0.0.1; the host shell is a recording double (no install runs)."""

from __future__ import annotations

from typing import Any

import pytest
from dreamlake.controlplane.client import Client
from dreamlake.engine.errors import DreamlakeError
from dreamlake.engine.lakeshore import ControlPlane
from dreamlake.engine.verbs.connect import _token
from lakeshore_fixtures import ServerProc, free_port


def test_minted_token_is_a_daemon_token(server: ServerProc) -> None:
    cp = ControlPlane(url=server.url, token=server.admin_token)
    token = _token(cp, "lab", "host-1", existing="")
    assert token != server.admin_token
    who = Client(server.url, token).whoami()
    assert who == {"admin": False, "namespace": "default"}


def test_an_admin_token_on_the_host_is_replaced(server: ServerProc) -> None:
    cp = ControlPlane(url=server.url, token=server.admin_token)
    token = _token(cp, "lab", "host-1", existing=server.admin_token)
    assert token != server.admin_token
    assert Client(server.url, token).whoami()["admin"] is False
    # a daemon token already there, still valid, is kept
    assert _token(cp, "lab", "host-1", existing=token) == token


@pytest.mark.parametrize("why", ["not_admin", "unreachable"])
def test_minting_failure_fails_without_falling_back(server: ServerProc, why: str) -> None:
    if why == "not_admin":
        cp = ControlPlane(url=server.url, token=server.admin.create_token("default"))
    else:
        cp = ControlPlane(url=f"http://127.0.0.1:{free_port()}", token=server.admin_token)
    with pytest.raises(DreamlakeError) as err:
        _token(cp, "lab", "host-1", existing="")
    assert err.value.kind == "token_mint_failed"
    assert "nothing was installed" in str(err.value)
    assert server.admin_token not in str(err.value)


class RecordingShell:
    """A test double for the host's shell: records every command, runs none."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def run(self, command: str, **_: Any) -> Any:
        self.commands.append(command)

        class Out:
            stdout = "/home/test\n" if "HOME" in command else ""
            stderr = ""
            returncode = 0
            ok = True

        return Out()

    def close(self) -> None:
        pass


def test_nothing_is_installed_when_minting_fails(server: ServerProc) -> None:
    from dreamlake.engine.verbs import connect as connect_mod

    cp = ControlPlane(url=f"http://127.0.0.1:{free_port()}", token=server.admin_token)
    shell = RecordingShell()
    with pytest.raises(DreamlakeError):
        connect_mod._install_and_start(
            obs=type("Obs", (), {"name": "lab"})(),  # type: ignore[arg-type]
            cp=cp,
            shell=shell,  # type: ignore[arg-type]
            label="host-1",
            local=False,
            dd=None,
            say=lambda _msg: None,
            watch=None,
            queues=(),
            worker_name=None,
            workdir=None,
        )
    # only reads ran (where home is, the token already there): no install, no start
    assert shell.commands and any(c.startswith("cat ") for c in shell.commands)
    assert not any(
        w in c
        for c in shell.commands
        for w in ("mkdir", "chmod", "nohup", "systemctl", "tmux", "mv ")
    )
