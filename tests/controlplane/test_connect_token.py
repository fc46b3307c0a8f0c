"""``connect`` gives a daemon only a token minted for it: never the caller's own
(admin) token, and when minting fails it fails before anything is installed. Real
control plane on 127.0.0.1; the host shell is a recording double (no install runs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from dreamlake.engine.contract.errors import DreamlakeError
from dreamlake.engine.daemon.identity import mint
from dreamlake.engine.world.lakeshore import ControlPlane
from lakeshore_fixtures import ServerProc, free_port
from tls_proxy import TLSProxy

SHARES_SERVER = True  # its tests keep to names of their own: the session's server


def test_minted_token_is_a_daemon_token(server: ServerProc) -> None:
    cp = ControlPlane(url=server.url, token=server.admin_token)
    token = mint(cp, "lab", "host-1", existing="")
    assert token != server.admin_token
    who = Client(server.url, token).whoami()
    assert who == {"admin": False, "namespace": "default", "scope": "daemon", "provider": "lab"}


def _minted(admin: Client, provider: str) -> list[tuple[str, str | None]]:
    """(scope, revokedAt) of every token minted for ``provider``'s hosts."""
    rows = admin.request("GET", "/api/tokens", query={"revoked": "true"})
    return [(r["scope"], r["revokedAt"]) for r in rows if r.get("provider") == provider]


def test_behind_a_tls_terminating_proxy_the_host_gets_a_daemon_token(
    server: ServerProc, tmp_path: Path
) -> None:
    """An ``https://`` URL whose server serves plain HTTP behind a proxy and signs
    no certificates: one mint, a daemon token (a bootstrap token would be spent on
    nothing: the certificate request is answered 409)."""
    with TLSProxy(("127.0.0.1", server.port), tmp_path / "proxy") as proxy:
        cp = ControlPlane(url=proxy.url, token=server.admin_token, ca=str(proxy.ca))
        token = mint(cp, "behind", "host-1", existing="")
        who = Client(proxy.url, token, ca=str(proxy.ca)).whoami()
        assert (who["scope"], who["provider"]) == ("daemon", "behind")
        again = mint(cp, "behind", "host-1", existing=token)
    # one token a connect, the earlier one replaced: no bootstrap token on the way
    minted = _minted(server.admin, "behind")
    assert sorted((scope, ended is None) for scope, ended in minted) == [
        ("daemon", False),
        ("daemon", True),
    ]
    assert Client(server.url, again).whoami()["scope"] == "daemon"


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """A ``lakeshore serve --tls-cert`` of its own (it signs daemons' certificates):
    (url, admin token, CA file)."""
    from test_tls_serving import _pki, _serve, _stop

    tmp = tmp_path_factory.mktemp("tls-mint")
    pki = _pki(tmp / "pki", ["localhost", "127.0.0.1"])
    served = _serve(
        tmp, "--tls-cert", str(pki.cert), "--tls-key", str(pki.key), probe=False, ca=pki.ca
    )
    try:
        yield served.url, served.admin_token, str(pki.ca)
    finally:
        _stop(served)


def test_over_tls_the_host_gets_a_bootstrap_token(tls_server: tuple[str, str, str]) -> None:
    """A server that serves TLS signs certificates: connect's one mint is a bootstrap
    token, which the daemon spends on its certificate."""
    url, admin_token, ca = tls_server
    cp = ControlPlane(url=url, token=admin_token, ca=ca)
    mint(cp, "direct", "host-1", existing="")
    admin = Client(url, admin_token, ca=ca)
    assert _minted(admin, "direct") == [("bootstrap", None)]


def test_or_daemon_is_the_servers_choice(server: ServerProc) -> None:
    """``orDaemon`` asks for a bootstrap token where the server signs certificates,
    else a daemon token, and the answer says which; without it a bootstrap token is
    what was asked for (an admin's by hand), and it is for bootstrap tokens only."""
    body = {"scope": "bootstrap", "provider": "choice", "host": "h", "orDaemon": True}
    out = server.admin.request("POST", "/api/namespaces/default/tokens", body)
    assert out["scope"] == "daemon"
    body = {"scope": "bootstrap", "provider": "choice2"}
    assert server.admin.request("POST", "/api/namespaces/default/tokens", body)["scope"] == (
        "bootstrap"
    )
    with pytest.raises(ApiFailure) as refused:
        body = {"scope": "daemon", "provider": "choice", "orDaemon": True}
        server.admin.request("POST", "/api/namespaces/default/tokens", body)
    assert (refused.value.status, refused.value.error) == (422, "validation_error")


def _live_daemon_tokens(server: ServerProc, provider: str) -> list[dict[str, Any]]:
    rows = server.admin.request("GET", "/api/tokens")
    return [r for r in rows if r.get("scope") == "daemon" and r.get("provider") == provider]


def test_connect_replaces_the_hosts_token(server: ServerProc) -> None:
    """One daemon token per provider host: every connect mints a new one and the
    one the host had stops working (tokens list does not grow per connect)."""
    cp = ControlPlane(url=server.url, token=server.admin_token)
    first = mint(cp, "swap", "host-1", existing="")
    second = mint(cp, "swap", "host-1", existing=first)
    third = mint(cp, "swap", "host-1", existing="")  # the host lost its file
    assert len({first, second, third}) == 3
    for old in (first, second):
        with pytest.raises(ApiFailure) as err:
            Client(server.url, old).whoami()
        assert err.value.status == 401
    assert Client(server.url, third).whoami()["provider"] == "swap"
    live = _live_daemon_tokens(server, "swap")
    assert [t["host"] for t in live] == ["host-1"]
    # another host of the same provider keeps its own
    other = mint(cp, "swap", "host-2", existing="")
    assert {t["host"] for t in _live_daemon_tokens(server, "swap")} == {"host-1", "host-2"}
    assert Client(server.url, third).whoami()["scope"] == "daemon"
    assert Client(server.url, other).whoami()["scope"] == "daemon"


def test_an_admin_token_on_the_host_is_replaced_not_revoked(server: ServerProc) -> None:
    cp = ControlPlane(url=server.url, token=server.admin_token)
    token = mint(cp, "lab", "host-1", existing=server.admin_token)
    assert token != server.admin_token
    assert Client(server.url, token).whoami()["admin"] is False
    assert server.admin.whoami()["admin"] is True  # never revoked by a connect


def test_a_legacy_daemon_token_on_the_host_is_revoked(server: ServerProc) -> None:
    """A token minted for a daemon before tokens had scopes (a namespace token
    labelled ``nymph ...``) is revoked by the connect that replaces it; a person's
    namespace token on the host is left alone."""
    cp = ControlPlane(url=server.url, token=server.admin_token)
    legacy = server.admin.create_token("default", label="nymph old on host-9")
    person = server.admin.create_token("default", label="alice")
    mint(cp, "old", "host-9", existing=legacy)
    mint(cp, "old", "host-9", existing=person)
    with pytest.raises(ApiFailure):
        Client(server.url, legacy).whoami()
    assert Client(server.url, person).whoami()["namespace"] == "default"


@pytest.mark.parametrize("why", ["not_admin", "unreachable"])
def test_minting_failure_fails_without_falling_back(server: ServerProc, why: str) -> None:
    if why == "not_admin":
        cp = ControlPlane(url=server.url, token=server.admin.create_token("default"))
    else:
        cp = ControlPlane(url=f"http://127.0.0.1:{free_port()}", token=server.admin_token)
    with pytest.raises(DreamlakeError) as err:
        mint(cp, "lab", "host-1", existing="")
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


def _obs(name: str) -> object:
    """The little of an observation installing reads: the name and the record's
    identity (the daemon is keyed by it)."""
    record = type("Record", (), {"identity": lambda self, _dir: "prv-0123456789abcdef"})()
    return type("Obs", (), {"name": name, "record": record, "dir": Path("/nonexistent")})()


def test_nothing_is_installed_when_minting_fails(server: ServerProc) -> None:
    from dreamlake.engine.verbs import connect as connect_mod

    cp = ControlPlane(url=f"http://127.0.0.1:{free_port()}", token=server.admin_token)
    shell = RecordingShell()
    with pytest.raises(DreamlakeError):
        connect_mod._install_and_start(
            obs=_obs("lab"),  # type: ignore[arg-type]
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
    assert shell.commands and all("cat " in c for c in shell.commands)
    assert not any(
        w in c
        for c in shell.commands
        for w in ("mkdir", "chmod", "nohup", "systemctl", "tmux", "mv ")
    )
