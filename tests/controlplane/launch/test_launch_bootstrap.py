"""What a launch hands its instance on a server that signs daemons' certificates: a
one-use, short-lived bootstrap token for its provider, good for the daemon bundle
until it is spent on the certificate, and for nothing else. In process: the real
app over SQLite, with the built-in CA's issuer set as ``lakeshore serve`` sets it
when it serves TLS (the TestClient speaks no TLS, so the certificate itself is
presented in test_ssh_launch_tls.py), and a launcher TEST DOUBLE standing in for
a cloud.

Refused: a reused bootstrap token, an expired one, one of provider A asking for B's
certificate, one used on a worker route. Terminating the instance revokes the
certificate its token was spent on (and the renewals), though the token itself was
revoked when it was spent."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from dreamlake.controlplane.nymph.keypair import KeyPair
from launch_harness import P, ok


class RecordingLauncherDouble:
    """Stands in for a cloud launcher: keeps the order (its bootstrap tokens)."""

    def __init__(self) -> None:
        self.orders: list[Any] = []

    def launch(self, order: Any) -> dict[str, Any]:
        self.orders.append(order)
        n = len(self.orders)
        return {"instances": [{"id": f"i-{n}-{i}", "state": "pending"} for i in range(order.count)]}

    def describe(self, order: Any, ids: Any) -> dict[str, str]:
        return dict.fromkeys(ids, "running")

    def terminate(self, order: Any, ids: Any) -> None:
        pass


def _signing(app: Any) -> None:
    """The app signs daemons' certificates, as when ``lakeshore serve`` serves TLS."""
    from dreamlake.controlplane.server.builtin_ca import make_ca
    from dreamlake.controlplane.server.identity.issue import Issuer

    ca_pem, ca_key = make_ca("launch test CA")
    app.state.client_ca = Issuer(ca_pem, lambda: ca_key)


def _setup(app_client: tuple[Any, Any], signs: bool = True) -> tuple[Any, Any, Any]:
    client, app = app_client
    app.state.queue_loop.stop()
    if signs:
        _signing(app)
    double = RecordingLauncherDouble()
    app.state.launch_backends = {"EC2": double}
    for name in ("aws", "other"):
        body = {"name": name, "launcher": "EC2", "kwargs": {"region": "r", "image_id": "ami-1"}}
        ok(client.post(P + "/providers", json=body), 201)
    return client, app, double


def _row(app: Any, token: str) -> Any:
    from dreamlake.controlplane.models import Token
    from dreamlake.controlplane.server.access.tokens import hash_token
    from sqlalchemy import select

    with app.state.sessionmaker() as s:
        row = s.scalar(select(Token).where(Token.token_hash == hash_token(token)))
        s.expunge_all()
        return row


def _as(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _csr(client: Any, token: str, provider: str | None = None, instance: str | None = None) -> Any:
    body: dict[str, Any] = {"csr": KeyPair().csr_pem("nymph")}
    if provider is not None:
        body["provider"] = provider
    if instance is not None:
        body["instance"] = instance
    return client.post(P + "/daemon-certs", json=body, headers=_as(token))


def test_a_launch_hands_a_one_use_bootstrap_token(app_client: tuple[Any, Any]) -> None:
    from dreamlake.controlplane.db import utcnow
    from dreamlake.controlplane.launch import tokens

    client, app, double = _setup(app_client)
    out = ok(client.post(P + "/launch", json={"provider": "aws", "count": 2}), 201)
    (order,) = double.orders
    first, second = order.bootstrap.tokens
    row = _row(app, first)
    assert (row.scope, row.provider_name, row.instance_id) == ("bootstrap", "aws", "")
    assert row.label.startswith("instance aws ")
    lives = (row.expires_at - utcnow()).total_seconds()
    assert 0 < lives <= tokens.bootstrap_seconds() and lives > tokens.bootstrap_seconds() - 60
    assert _row(app, second).scope == "bootstrap"

    # before it is spent: the daemon bundle, and nothing of a daemon's work
    sha = order.bootstrap.daemon_sha256
    assert client.get(P + f"/daemon/{sha}", headers=_as(first)).status_code == 200
    refused = client.post(P + "/workers", json={"providerName": "aws", "instanceId": "i-1-0"},
                          headers=_as(first))  # fmt: skip
    assert refused.status_code == 403, refused.text
    assert client.get(P + "/instances", headers=_as(first)).status_code == 403

    # provider A's token asks for B's certificate: refused, and not spent by it
    other = _csr(client, first, provider="other")
    assert other.status_code == 403 and "'aws'" in other.json()["detail"], other.text
    assert _row(app, first).revoked_at is None

    cert = ok(_csr(client, first, provider="aws", instance="i-1-0"), 201)
    assert cert["provider"] == "aws" and cert["identity"] == "lakeshore://default/aws/i-1-0"
    # spent: a second use, the bundle too, is refused
    again = _csr(client, first)
    assert again.status_code == 401, again.text
    assert client.get(P + f"/daemon/{sha}", headers=_as(first)).status_code == 401

    # terminating the instance revokes the certificate the spent token was exchanged for
    from dreamlake.controlplane.models import Token
    from sqlalchemy import select

    iid = out["instances"][0]["id"]
    ok(client.delete(P + f"/instances/{iid}"))
    with app.state.sessionmaker() as s:
        certs = list(s.scalars(select(Token).where(Token.label == f"cert {cert['serial']}")))
    assert len(certs) == 1 and certs[0].revoked_at is not None
    assert certs[0].root_token_id == row.id and certs[0].instance_id == "i-1-0"
    assert _row(app, second).revoked_at is None  # the other instance's is its own


def test_an_expired_launch_bootstrap_token_is_refused(
    app_client: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dreamlake.controlplane.launch import tokens

    monkeypatch.setenv("LAKESHORE_QUEUE_START_TIMEOUT", "1")
    monkeypatch.setattr(tokens, "LAUNCHER_SECONDS", 0.0)
    client, app, double = _setup(app_client)
    ok(client.post(P + "/launch", json={"provider": "aws", "clientToken": "ex-1"}), 201)
    (token,) = double.orders[0].bootstrap.tokens
    import time

    from dreamlake.controlplane.db import utcnow

    ends = _row(app, token).expires_at
    assert (ends - utcnow()).total_seconds() <= 1.0
    while utcnow() <= ends:  # its one second
        time.sleep(0.1)
    answer = _csr(client, token)
    assert answer.status_code == 401, answer.text
    assert "expired" in answer.json()["detail"]


def test_a_retried_launch_renews_its_unspent_bootstrap_tokens(
    app_client: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launch left pending (its launcher failed half-way) is sent again with the
    same tokens: their life starts again, so a slow retry hands no dead token."""
    from dreamlake.controlplane.db import utcnow
    from dreamlake.controlplane.launch import tokens
    from dreamlake.controlplane.models import Token
    from sqlalchemy import update

    client, app, double = _setup(app_client)
    calls = {"n": 0}
    real = double.launch

    def flaky(order: Any) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == 1:
            double.orders.append(order)
            raise RuntimeError("the cloud timed out")
        return real(order)

    double.launch = flaky  # type: ignore[method-assign]
    failed = client.post(P + "/launch", json={"provider": "aws", "clientToken": "re-1"})
    assert failed.status_code == 502, failed.text
    (token,) = double.orders[0].bootstrap.tokens
    with app.state.sessionmaker() as s:  # as if the first try was long ago
        s.execute(update(Token).where(Token.label.like("instance aws re-1%"))
                  .values(expires_at=utcnow() + timedelta(seconds=5)))  # fmt: skip
        s.commit()
    ok(client.post(P + "/launch", json={"provider": "aws", "clientToken": "re-1"}), 201)
    assert double.orders[-1].bootstrap.tokens == (token,)  # the same token, handed again
    lives = (_row(app, token).expires_at - utcnow()).total_seconds()
    assert lives > tokens.bootstrap_seconds() - 60


def test_a_plain_http_server_hands_a_daemon_token(app_client: tuple[Any, Any]) -> None:
    """A server that signs no certificates (plain HTTP) hands the instance token of
    old: a bootstrap token would be good for nothing there."""
    client, app, double = _setup(app_client, signs=False)
    ok(client.post(P + "/launch", json={"provider": "aws"}), 201)
    (token,) = double.orders[0].bootstrap.tokens
    row = _row(app, token)
    assert (row.scope, row.expires_at) == ("daemon", None)


def test_user_data_carries_the_ca_of_an_own_certificate(
    app_client: tuple[Any, Any], tmp_path: Any
) -> None:
    """Served with the operator's own certificate, the instance's start-up script
    carries the CA ``--tls-ca`` named (read at each launch: a replaced file is
    carried from then on), or else the root the certificate's chain includes."""
    from dreamlake.controlplane.launchers import bootstrap
    from dreamlake.controlplane.server.builtin_ca import issue_server, make_ca

    client, app, double = _setup(app_client)
    ca_pem, ca_key = make_ca("operator CA")
    leaf, _key = issue_server(ca_pem, ca_key, ["lakeshore.internal"])
    cert_file, ca_file = tmp_path / "server.crt", tmp_path / "ca.crt"
    cert_file.write_bytes(leaf)
    app.state.serving_cert_file = cert_file
    ok(client.post(P + "/launch", json={"provider": "aws"}), 201)
    assert double.orders[-1].bootstrap.ca_pem == ""  # a leaf alone: the host's trust store

    cert_file.write_bytes(leaf + ca_pem)  # the chain includes its root
    ok(client.post(P + "/launch", json={"provider": "aws"}), 201)
    assert double.orders[-1].bootstrap.ca_pem.strip() == ca_pem.decode().strip()

    ca_file.write_bytes(ca_pem)
    app.state.serving_ca_file = ca_file  # lakeshore serve --tls-ca
    cert_file.write_bytes(leaf)
    ok(client.post(P + "/launch", json={"provider": "aws"}), 201)
    order = double.orders[-1]
    assert order.bootstrap.ca_pem == ca_pem.decode()
    script = bootstrap.script(order, 0)
    assert ca_pem.decode().strip() in script and "--ca ca.crt" in script
    assert order.bootstrap.tokens[0] in script  # the bootstrap token, beside it

    ca_file.unlink()  # gone: a daemon handed no CA would not verify the server
    gone = client.post(P + "/launch", json={"provider": "aws"})
    assert gone.status_code == 503 and "--tls-ca" in gone.json()["detail"], gone.text


def test_tls_ca_must_verify_the_served_certificate(tmp_path: Any) -> None:
    from dreamlake.controlplane.launch import serving_ca
    from dreamlake.controlplane.server.builtin_ca import issue_server, make_ca

    ca_pem, ca_key = make_ca("operator CA")
    other_pem, _ = make_ca("another CA")
    leaf, _key = issue_server(ca_pem, ca_key, ["lakeshore.internal"])
    cert_file = tmp_path / "server.crt"
    cert_file.write_bytes(leaf)
    for name, data in (("ca.crt", ca_pem), ("both.crt", other_pem + ca_pem)):
        (tmp_path / name).write_bytes(data)
        serving_ca.check(cert_file, tmp_path / name)
    (tmp_path / "other.crt").write_bytes(other_pem)
    with pytest.raises(serving_ca.ServingCaError, match="issued the certificate of --tls-cert"):
        serving_ca.check(cert_file, tmp_path / "other.crt")
    (tmp_path / "junk.crt").write_text("not a certificate\n")
    with pytest.raises(serving_ca.ServingCaError, match="holds no PEM certificate"):
        serving_ca.check(cert_file, tmp_path / "junk.crt")
    assert serving_ca.chain_roots(leaf.decode()) == ""


def test_lakeshore_serve_refuses_a_tls_ca_that_does_not_verify_its_certificate(
    tmp_path: Any,
) -> None:
    import subprocess

    from aws_api import free_port
    from lakeshore_fixtures import clean_env, lakeshore_argv
    from test_tls_serving import _pki

    pki = _pki(tmp_path / "pki", ["127.0.0.1"])
    base = [*lakeshore_argv(), "serve", "--port", str(free_port()),
            "--data-dir", str(tmp_path / "data")]  # fmt: skip

    def serve(*extra: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *extra], env=clean_env(**env), capture_output=True,
                              text=True, timeout=120)  # fmt: skip

    alone = serve("--tls-ca", str(pki.ca))
    assert alone.returncode != 0 and "--tls-ca names the CA of --tls-cert" in alone.stderr
    wrong = serve(
        "--tls-cert", str(pki.cert), "--tls-key", str(pki.key), "--tls-ca", str(pki.other_ca)
    )
    assert wrong.returncode != 0, wrong.stderr
    assert "issued the certificate of --tls-cert" in wrong.stderr
    assert "Traceback" not in wrong.stderr
    named = serve("--tls-cert", str(pki.cert), "--tls-key", str(pki.key),
                  LAKESHORE_TLS_CA=str(pki.other_ca))  # fmt: skip
    assert named.returncode != 0 and "issued the certificate of --tls-cert" in named.stderr


def test_a_credential_bound_to_an_instance_asks_for_no_other_instances_certificate(
    app_client: tuple[Any, Any],
) -> None:
    """An instance's token pinned by its first registration (a daemon token over plain
    HTTP, before certificates): a certificate for another instance is refused, its
    own is bound to it."""
    from dreamlake.controlplane.launch.tokens import _mint

    client, app, _double = _setup(app_client)
    with app.state.sessionmaker() as s:
        token, _tid = _mint(s, 1, "instance aws pinned-0", "aws")
        s.commit()
    reg = {"providerName": "aws", "instanceId": "i-A"}
    ok(client.post(P + "/workers", json=reg, headers=_as(token)), 201)
    other = _csr(client, token, provider="aws", instance="i-B")
    assert other.status_code == 403 and "'i-A'" in other.json()["detail"], other.text
    mine = ok(_csr(client, token, provider="aws", instance="i-A"), 201)
    assert mine["identity"] == "lakeshore://default/aws/i-A"


def test_revoking_a_providers_tokens_takes_its_unspent_bootstrap_tokens(
    app_client: tuple[Any, Any],
) -> None:
    """``destroy``, ``delete`` (the provider's tokens revoked): an instance that has
    not started yet can no longer ask for a certificate; another provider's keeps."""
    client, app, double = _setup(app_client)
    ok(client.post(P + "/launch", json={"provider": "aws"}), 201)
    ok(client.post(P + "/launch", json={"provider": "other"}), 201)
    (mine,), (theirs,) = (o.bootstrap.tokens for o in double.orders)
    ok(client.delete(P + "/providers/aws/tokens"))
    assert _row(app, mine).revoked_at is not None
    assert _csr(client, mine).status_code == 401
    assert _row(app, theirs).revoked_at is None
