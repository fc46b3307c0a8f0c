"""A daemon's identity is a client certificate: a real ``lakeshore serve`` over TLS
on 127.0.0.1 (SQLite and PostgreSQL) signs a daemon's request once for its
bootstrap token, and from then on the daemon authenticates by mutual TLS; its key
is made on the host and never sent. Refused: a reused or expired bootstrap token, a
certificate of another CA, an expired one, a revoked one, one of provider A on B's
routes. Renewed with the current certificate before it ends."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import secrets
import ssl
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure, Client, Untrusted
from dreamlake.controlplane.nymph.credentials import Credentials
from dreamlake.controlplane.nymph.keypair import KeyPair
from lakeshore_fixtures import SHARED_KEY, clean_env, lakeshore_argv, refused_within
from test_tls_serving import Pki, TlsServer, _pki, _serve, _stop

GRACE_ENV = "LAKESHORE_DAEMON_CERT_GRACE_SECONDS"
GRACE = 6.0


@dataclass
class Setup:
    server: TlsServer
    pki: Pki
    db: str | None
    key: str | None

    def admin(self) -> Client:
        return Client(self.server.url, self.server.admin_token, ca=str(self.pki.ca))

    def client(self, **kw: Any) -> Client:
        return Client(self.server.url, ca=str(self.pki.ca), **kw)


@pytest.fixture(scope="module")
def setup(db_url: str | None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("certs")
    pki = _pki(tmp / "pki", ["localhost", "127.0.0.1"])
    env = {"LAKESHORE_SECRET_KEY": SHARED_KEY} if db_url else {}
    env[GRACE_ENV] = str(GRACE)  # a renewed certificate ends this long after (5 min otherwise)
    server = _serve(
        tmp, "--tls-cert", str(pki.cert), "--tls-key", str(pki.key),
        ca=pki.ca, db=db_url, env=env, probe=False,
    )  # fmt: skip
    yield Setup(server, pki, db_url, SHARED_KEY if db_url else None)
    _stop(server)


def _namespace(setup: Setup, name: str) -> None:
    try:
        setup.admin().create_namespace(name)
    except ApiFailure as exc:
        assert exc.status == 409


def _bootstrap(setup: Setup, ns: str, provider: str, **kw: Any) -> str:
    _namespace(setup, ns)
    return setup.admin().create_token(ns, scope="bootstrap", provider=provider, **kw)


def _enrolled(setup: Setup, folder: Path, ns: str, provider: str) -> tuple[Credentials, Client]:
    token = _bootstrap(setup, ns, provider, host="host-a")
    creds = Credentials(folder, ns, provider, lambda: token)
    client = setup.client(namespace=ns)
    creds.step(client)
    return creds, client


def test_a_bootstrap_token_is_exchanged_once_for_a_certificate(
    setup: Setup, tmp_path: Path
) -> None:
    from cryptography import x509

    token = _bootstrap(setup, "certs-a", "lab", host="host-a")
    creds = Credentials(tmp_path / "id", "certs-a", "lab", lambda: token)
    client = setup.client(namespace="certs-a")
    creds.step(client)
    pem = tmp_path / "id" / "daemon.pem"
    assert stat.S_IMODE(pem.stat().st_mode) == 0o600
    assert client.token is None and client.cert == str(pem)
    cert = x509.load_pem_x509_certificate(pem.read_bytes())
    uris = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(u) for u in uris.get_values_for_type(x509.UniformResourceIdentifier)] == [
        "lakeshore://certs-a/lab"
    ]
    # authenticated by the certificate alone: no Authorization header is sent
    who = client.whoami()
    assert (who["scope"], who["provider"]) == ("daemon", "lab")
    out = client.register("lab", "i-1", host="host-a")
    client.heartbeat(out["workerId"])
    # the bootstrap token is spent
    again = setup.client(namespace="certs-a", token=token)
    with pytest.raises(ApiFailure) as refused:
        again.request(
            "POST", "/api/namespaces/certs-a/daemon-certs", {"csr": KeyPair().csr_pem("x")}
        )
    assert refused.value.status == 401
    # and it never was good for anything but asking for a certificate
    other = _bootstrap(setup, "certs-a", "lab")
    with pytest.raises(ApiFailure) as nope:
        setup.client(namespace="certs-a", token=other).register("lab", "i-2")
    assert nope.value.status == 403


def test_an_expired_bootstrap_token_is_refused(setup: Setup, tmp_path: Path) -> None:
    token = _bootstrap(setup, "certs-b", "lab", expires_in=1)
    time.sleep(1.5)
    creds = Credentials(tmp_path / "id", "certs-b", "lab", lambda: token)
    with pytest.raises(ApiFailure) as refused:
        creds.step(setup.client(namespace="certs-b"))
    assert refused.value.status == 401
    assert not (tmp_path / "id" / "daemon.pem").exists()


def test_a_certificate_of_provider_a_may_not_act_for_b(setup: Setup, tmp_path: Path) -> None:
    _, client = _enrolled(setup, tmp_path / "id", "certs-c", "alpha")
    with pytest.raises(ApiFailure) as refused:
        client.register("beta", "i-1")
    assert refused.value.status == 403
    with pytest.raises(ApiFailure) as other_ns:
        Client(
            setup.server.url, namespace="certs-a", ca=str(setup.pki.ca), cert=client.cert
        ).register("alpha", "i-1")
    assert other_ns.value.status == 403
    assert _refusals(setup, "mismatch") >= 1


def _forged(setup: Setup, folder: Path, *, days: float, other_ca: bool) -> str:
    """A certificate for certs-d/lab, signed by the server's CA (unsealed from the
    database with the server's key) or by another, valid ``days`` from now."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from dreamlake.controlplane.db import make_engine, make_sessionmaker
    from dreamlake.controlplane.registry.crypto import SecretBox
    from dreamlake.controlplane.server import builtin_ca
    from dreamlake.controlplane.server.identity.issue import sign

    pair = KeyPair()
    if other_ca:
        ca_pem, ca_key = builtin_ca.make_ca("another CA")
    else:
        url = setup.db or f"sqlite:///{setup.server.data_dir / 'lakeshore.db'}"
        key = setup.key or (setup.server.data_dir / "secret.key").read_text().strip()
        engine = make_engine(url, 1)
        try:
            ca_pem, unseal = builtin_ca.shared_ca(
                make_sessionmaker(engine), SecretBox(key.encode())
            )
            ca_key = unseal()
        finally:
            engine.dispose()
    now = dt.datetime.now(dt.UTC) + dt.timedelta(days=days) - dt.timedelta(days=1)
    signed = sign(pair.csr_pem("x"), ca_pem, ca_key, namespace="certs-d", provider="lab",
                  instance=None, now=now)  # fmt: skip
    assert load_pem_private_key(pair.key_pem(), None) is not None
    path = folder / ("other.pem" if other_ca else "expired.pem")
    folder.mkdir(parents=True, exist_ok=True)
    path.write_bytes(signed.pem + pair.key_pem())
    return str(path)


@pytest.mark.parametrize("other_ca", [True, False], ids=["another-ca", "expired"])
def test_a_certificate_of_another_ca_or_expired_ends_the_handshake(
    setup: Setup, tmp_path: Path, other_ca: bool
) -> None:
    _namespace(setup, "certs-d")
    path = _forged(setup, tmp_path, days=-2 if not other_ca else 1, other_ca=other_ca)
    client = setup.client(namespace="certs-d", cert=path)
    with pytest.raises(Untrusted) as refused:
        client.whoami()
    assert "does not accept the client certificate" in str(refused.value)
    assert "connect" in refused.value.advice


def test_a_revoked_certificate_is_refused_at_once(setup: Setup, tmp_path: Path) -> None:
    _, client = _enrolled(setup, tmp_path / "id", "certs-e", "lab")
    client.whoami()  # known, and cached
    serial = json.loads((tmp_path / "id" / "daemon.json").read_text())["serial"]
    env = clean_env(
        LAKESHORE_URL=setup.server.url,
        LAKESHORE_TOKEN=setup.server.admin_token,
        LAKESHORE_CA=str(setup.pki.ca),
    )
    listed = subprocess.run(
        [*lakeshore_argv(), "tokens", "list", "--json"], env=env, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    rows = [r for r in json.loads(listed.stdout) if r.get("label") == f"cert {serial}"]
    assert len(rows) == 1 and rows[0]["scope"] == "daemon" and rows[0]["provider"] == "lab"
    revoked = subprocess.run(
        [*lakeshore_argv(), "tokens", "revoke", str(rows[0]["id"])],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert revoked.returncode == 0, revoked.stderr
    with pytest.raises(ApiFailure) as refused:
        client.whoami()
    assert refused.value.status == 401
    assert _refusals(setup, "revoked") >= 1


def _refusals(setup: Setup, reason: str) -> float:
    """``lakeshore_certificate_refusals_total{reason}`` as the server's /metrics says."""
    import urllib.request

    req = urllib.request.Request(
        setup.server.url + "/metrics",
        headers={"Authorization": f"Bearer {setup.server.admin_token}"},
    )
    ctx = ssl.create_default_context(cafile=str(setup.pki.ca))
    with urllib.request.urlopen(req, context=ctx, timeout=10) as answer:
        text = answer.read().decode()
    wanted = f'lakeshore_certificate_refusals_total{{reason="{reason}"}} '
    found = [line for line in text.splitlines() if line.startswith(wanted)]
    return float(found[0].split()[-1]) if found else 0.0


def test_a_providers_revocation_revokes_its_certificates(setup: Setup, tmp_path: Path) -> None:
    _, client = _enrolled(setup, tmp_path / "id", "certs-f", "lab")
    client.whoami()
    setup.admin().request("DELETE", "/api/namespaces/certs-f/providers/lab/tokens")
    with pytest.raises(ApiFailure) as refused:
        client.whoami()
    assert refused.value.status == 401


def test_revoking_the_token_it_came_from_revokes_the_certificate(
    setup: Setup, tmp_path: Path
) -> None:
    """An instance's daemon token (revoked when its instance ends) asks for the
    certificate: revoking that token revokes the certificate, and its renewals."""
    _namespace(setup, "certs-j")
    admin = setup.admin()
    token = admin.create_token("certs-j", label="instance i-9", scope="daemon", provider="lab")
    creds = Credentials(tmp_path / "id", "certs-j", "lab", lambda: token)
    client = setup.client(namespace="certs-j")
    creds.step(client)
    meta = json.loads((tmp_path / "id" / "daemon.json").read_text())
    (tmp_path / "id" / "daemon.json").write_text(json.dumps(meta | {"issuedAt": 0}))
    creds.step(client)  # renewed: the same root
    assert client.whoami()["scope"] == "daemon"
    (row,) = [t for t in admin.request("GET", "/api/tokens") if t["label"] == "instance i-9"]
    admin.request("DELETE", f"/api/tokens/{row['id']}")
    with pytest.raises(ApiFailure) as refused:
        client.whoami()
    assert refused.value.status == 401
    certs = [t for t in admin.request("GET", "/api/tokens", query={"revoked": "true"})
             if (t["label"] or "").startswith("cert ") and t["namespace"] == "certs-j"]  # fmt: skip
    assert len(certs) == 2 and all(t["revokedAt"] for t in certs)


def test_the_daemon_renews_with_its_current_certificate(setup: Setup, tmp_path: Path) -> None:
    folder = tmp_path / "id"
    creds, client = _enrolled(setup, folder, "certs-g", "lab")
    poller = dataclasses.replace(client, keep_alive=True)
    creds.apply(poller)
    worker = client.register("lab", "i-1")["workerId"]
    for _ in range(2):  # one kept connection, with the first certificate
        assert poller.poll_work(worker, wait=0) is None
    assert poller.connection.opened == 1
    first = json.loads((folder / "daemon.json").read_text())
    assert not creds.due()
    meta = dict(first, issuedAt=time.time() - 49 * 3600)  # two thirds of its life ago
    (folder / "daemon.json").write_text(json.dumps(meta))
    assert creds.due()
    creds.step(client, poller)  # the bootstrap token is spent: renewed by the certificate
    second = json.loads((folder / "daemon.json").read_text())
    assert second["serial"] != first["serial"]
    assert poller.poll_work(worker, wait=0) is None
    assert poller.connection.opened == 2  # a new handshake, with the new one
    assert client.whoami()["provider"] == "lab"


def test_people_keep_bearer_tokens_over_the_same_port(setup: Setup) -> None:
    assert setup.admin().whoami()["admin"] is True
    with pytest.raises(ApiFailure) as refused:
        setup.client().whoami()
    assert refused.value.status == 401


def test_a_plain_server_signs_nothing(shared_server_sqlite: Any) -> None:
    server = shared_server_sqlite  # plain HTTP, default settings
    ns = f"certs-h-{secrets.token_hex(3)}"
    server.admin.create_namespace(ns)
    token = server.admin.create_token(ns, scope="bootstrap", provider="lab")
    client = Client(server.url, token, namespace=ns)
    with pytest.raises(ApiFailure) as refused:
        client.request(
            "POST", f"/api/namespaces/{ns}/daemon-certs", {"csr": KeyPair().csr_pem("x")}
        )
    assert refused.value.status == 409


def test_the_keypair_is_one_ssl_loads(tmp_path: Path) -> None:
    pair = KeyPair()
    from dreamlake.controlplane.server.builtin_ca import make_ca
    from dreamlake.controlplane.server.identity.issue import sign

    ca_pem, ca_key = make_ca("t")
    signed = sign(pair.csr_pem("x"), ca_pem, ca_key, namespace="n", provider="p", instance="i/1")
    path = tmp_path / "id.pem"
    path.write_bytes(signed.pem + pair.key_pem())
    ssl.create_default_context().load_cert_chain(str(path))
    assert signed.uri == "lakeshore://n/p/i%2F1"


def test_an_installed_daemon_enrolls_with_its_bootstrap_token(setup: Setup, tmp_path: Path) -> None:
    """What connect installs over https: the CA beside the daemon, a bootstrap token;
    the host's python runs the zipapp, which makes its key, asks for its certificate
    and works by it. A certificate of an earlier install is removed."""
    from dreamlake.engine.daemon import install
    from dreamlake.engine.remote import LocalShell
    from lakeshore_fixtures import wait_until

    home = tmp_path / "home"
    shell = LocalShell(env={"HOME": str(home)})
    token = _bootstrap(setup, "certs-i", "lab", host="h-1")
    cfg = install.DaemonConfig(
        "lab", setup.server.url, "certs-i", token, ("q",), worker_name="w-1",
        ca_pem=setup.pki.ca.read_bytes(),
    )  # fmt: skip
    folder = Path(install.install_dir(str(home), "lab"))
    folder.mkdir(parents=True)
    (folder / "daemon.pem").write_text("an earlier install's\n")
    inst = install.install(shell, cfg, cache=tmp_path / "cache")
    assert not (folder / "daemon.pem").exists()
    assert (folder / "ca.crt").read_bytes() == setup.pki.ca.read_bytes()
    assert "--ca" in Path(inst.run_script).read_text()
    log = open(tmp_path / "nymph.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        ["sh", inst.run_script], env=clean_env(HOME=str(home)), stdout=log, stderr=log
    )
    try:
        admin = setup.admin()
        admin.namespace = "certs-i"

        def live() -> bool:
            return any(w["providerName"] == "lab" for w in admin.workers("lab"))

        assert wait_until(live, 120), (tmp_path / "nymph.log").read_text()
        assert stat.S_IMODE((folder / "daemon.pem").stat().st_mode) == 0o600
        item = admin.submit_work("lab", "echo by-certificate", queue="q")
        done = admin.get_work(item["id"], wait=60)
        assert done["state"] == "succeeded", (done, (tmp_path / "nymph.log").read_text())
        assert "got a client certificate" in (tmp_path / "nymph.log").read_text()
    finally:
        proc.terminate()
        proc.wait(15)
        log.close()


def test_user_data_carries_the_ca_and_the_fetch_verifies_with_it(
    setup: Setup, tmp_path: Path
) -> None:
    from dreamlake.controlplane.launchers import bootstrap
    from dreamlake.controlplane.launchers.order import Bootstrap

    ca = setup.pki.ca.read_text()
    boot = Bootstrap(setup.server.url, "0" * 64, ("tok",), daemon_kind="pyz", ca_pem=ca)

    class Order:
        namespace, provider, bootstrap = "n", "p", boot

    script = bootstrap.script(Order(), 0, instance_id="i-1")  # type: ignore[arg-type]
    assert ca.strip() in script and "--ca ca.crt" in script
    # the fetch, run as the script runs it: verified with ca.crt, refused without
    (tmp_path / "token").write_text(setup.server.admin_token)
    url = setup.server.url + "/api/whoami"

    def fetch() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["python3", "-I", "-", url, "out"], input=bootstrap._FETCH, cwd=tmp_path,
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    refused = fetch()
    assert refused.returncode != 0 and "CERTIFICATE_VERIFY_FAILED" in refused.stderr
    (tmp_path / "ca.crt").write_text(ca)
    ok = fetch()
    assert ok.returncode == 0, ok.stderr
    assert json.loads((tmp_path / "out").read_text())["admin"] is True


def test_an_ended_certificate_and_a_spent_token_name_connect(
    setup: Setup, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """After an outage longer than its certificate's life the daemon says so, and that
    connect hands the host a new bootstrap token; it never presents the ended one."""
    folder = tmp_path / "id"
    creds, client = _enrolled(setup, folder, "certs-k", "lab")
    meta = json.loads((folder / "daemon.json").read_text())
    (folder / "daemon.json").write_text(json.dumps(meta | {"notAfter": "2000-01-01T00:00:00Z"}))
    assert not creds.valid() and creds.due()
    with pytest.raises(ApiFailure) as refused, caplog.at_level("ERROR", logger="nymph"):
        creds.step(client)
    assert refused.value.status == 401 and client.cert is None
    assert "has ended" in caplog.text and "dreamlake provider connect" in caplog.text


def test_a_replica_over_the_same_database_takes_the_same_certificate(
    setup: Setup, tmp_path: Path
) -> None:
    """Daemons move between replicas with their certificates: every replica trusts
    the one built-in CA of the database, and a revocation at one is refused at the
    other at once."""
    if setup.db is None:
        pytest.skip("replicas share a PostgreSQL database")
    other = _serve(
        tmp_path, "--tls-cert", str(setup.pki.cert), "--tls-key", str(setup.pki.key),
        ca=setup.pki.ca, db=setup.db, env={"LAKESHORE_SECRET_KEY": SHARED_KEY}, probe=False,
    )  # fmt: skip
    try:
        _, client = _enrolled(setup, tmp_path / "id", "certs-l", "lab")
        there = Client(other.url, namespace="certs-l", ca=str(setup.pki.ca), cert=client.cert)
        assert there.whoami()["provider"] == "lab"
        worker = there.register("lab", "i-1")["workerId"]
        client.heartbeat(worker)
        setup.admin().request("DELETE", "/api/namespaces/certs-l/providers/lab/tokens")
        # told by the database's notification, not by its cache running out (60 s)
        assert refused_within(there, 20), "the other replica still accepts it"
    finally:
        _stop(other)


def test_where_nymph_keeps_its_certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dreamlake.controlplane.nymph import main

    monkeypatch.delenv("NYMPH_CERT_DIR", raising=False)
    monkeypatch.delenv("LAKESHORE_TOKEN", raising=False)
    base = ["--provider", "lab", "--token-file", str(tmp_path / "t" / "token")]

    def folder(*argv: str) -> Path | None:
        args = main.parser().parse_args([*base, *argv])
        creds = main._credentials(args, lambda: None)
        return None if creds is None else creds.folder

    assert folder("--server", "https://h:1") == tmp_path / "t"  # beside the token file
    assert folder("--server", "https://h:1", "--cert-dir", str(tmp_path / "c")) == tmp_path / "c"
    assert folder("--server", "http://127.0.0.1:1") is None  # plain HTTP: bearer tokens


def test_a_renewal_ends_the_old_certificate_after_a_grace(setup: Setup, tmp_path: Path) -> None:
    """Renewed, the old certificate stays good for the grace (longer than a long-poll:
    one held on it across the renewal answers as usual), then is refused; the new
    one is not touched. Its row says when it ends."""
    import shutil
    import threading

    from dreamlake.controlplane.server.deps import TokenCache
    from dreamlake.controlplane.server.identity.routes import GRACE_SECONDS, grace_seconds

    assert GRACE_SECONDS > 60  # the longest long-poll (MAX_WAIT_SECONDS)
    # a cached entry ends before the default grace does, so a renewal flushes no cache
    # (this module's grace, 6 s, is shorter: its renewals flush them)
    assert TokenCache().ttl < GRACE_SECONDS
    folder = tmp_path / "id"
    creds, client = _enrolled(setup, folder, "certs-m", "lab")
    old_pem = tmp_path / "old.pem"
    shutil.copy(folder / "daemon.pem", old_pem)
    old_serial = json.loads((folder / "daemon.json").read_text())["serial"]
    held = setup.client(namespace="certs-m", cert=str(old_pem), keep_alive=True)
    worker = held.register("lab", "i-1")["workerId"]
    polled: dict[str, Any] = {}

    def poll() -> None:
        try:
            polled["answer"] = held.poll_work(worker, wait=2)
        except Exception as exc:
            polled["error"] = exc

    poller = threading.Thread(target=poll)
    poller.start()
    meta = json.loads((folder / "daemon.json").read_text())
    (folder / "daemon.json").write_text(json.dumps(meta | {"issuedAt": 0}))
    renewed_at = time.time()
    creds.step(client)  # renewed with the old certificate, during the held poll
    poller.join(30)
    assert "error" not in polled and polled.get("answer") is None, polled
    assert json.loads((folder / "daemon.json").read_text())["serial"] != old_serial
    (row,) = [t for t in setup.admin().request("GET", "/api/tokens")
              if t["label"] == f"cert {old_serial}"]  # fmt: skip
    ends = dt.datetime.fromisoformat(row["expiresAt"].replace("Z", "+00:00")).timestamp()
    assert renewed_at - 5 < ends <= time.time() + GRACE + 1
    old = setup.client(namespace="certs-m", cert=str(old_pem))
    # refused once the grace is over (on a busy machine: soon after)
    assert refused_within(old, GRACE + 30), "the renewed certificate is still accepted"
    assert time.time() >= ends - 1  # not before its grace was over
    assert client.whoami()["provider"] == "lab"  # the new one works on
    assert grace_seconds() == GRACE_SECONDS  # this process: the default


def _exchanges(client: Client) -> list[Any]:
    """Record what each of ``client``'s requests did (a new connection, resumed)."""
    seen: list[Any] = []
    client.observer = client.connection.observer = seen.append
    return seen


def _new_connections(seen: list[Any]) -> list[bool]:
    """Whether each new connection among ``seen`` resumed its TLS session."""
    return [e.resumed for e in seen if e.new_connection]


def test_a_daemons_next_connection_resumes_its_tls_session(setup: Setup, tmp_path: Path) -> None:
    """Every new connection after the first offers the last session the server gave
    (this client's or its sibling's); the server resumes it and still knows the
    daemon by its certificate alone: its identity and scope hold as on a full
    handshake."""
    _, client = _enrolled(setup, tmp_path / "id", "certs-n", "alpha")
    seen = _exchanges(client)
    assert client.whoami()["provider"] == "alpha"  # full: enrolment's presented no certificate
    worker = client.register("alpha", "i-1")["workerId"]
    client.heartbeat(worker)
    assert (who := client.whoami())["scope"] == "daemon" and who["provider"] == "alpha"
    assert _new_connections(seen) == [False, True, True, True], seen  # no keep-alive here
    with pytest.raises(ApiFailure) as other:  # its scope, on a resumed connection
        client.register("beta", "i-1")
    assert other.value.status == 403 and seen[-1].resumed
    poller = client.sibling()  # the long-poll's client: a connection of its own
    poller.keep_alive = True
    polled = _exchanges(poller)
    assert poller.poll_work(worker, wait=0) is None
    assert _new_connections(polled) == [True]
    assert client.sessions is poller.sessions and len(client.sessions) == 1


def test_a_renewed_certificate_drops_the_session(setup: Setup, tmp_path: Path) -> None:
    """A renewal's next connection is a full handshake with the new certificate (the
    old one's row revoked, it is accepted), and the one after resumes again."""
    folder = tmp_path / "id"
    creds, client = _enrolled(setup, folder, "certs-o", "lab")
    seen = _exchanges(client)
    client.whoami()
    client.whoami()
    assert _new_connections(seen) == [False, True]
    old = json.loads((folder / "daemon.json").read_text())["serial"]
    meta = json.loads((folder / "daemon.json").read_text())
    (folder / "daemon.json").write_text(json.dumps(meta | {"issuedAt": 0}))
    creds.step(client)  # renewed over a resumed connection, with the old certificate
    (row,) = [t for t in setup.admin().request("GET", "/api/tokens") if t["label"] == f"cert {old}"]
    setup.admin().request("DELETE", f"/api/tokens/{row['id']}")
    del seen[:]
    assert client.whoami()["provider"] == "lab"  # by the new certificate
    assert client.whoami()["provider"] == "lab"
    assert _new_connections(seen) == [False, True], seen


def test_a_revoked_certificate_is_refused_on_a_resumed_connection(
    setup: Setup, tmp_path: Path
) -> None:
    """The server checks a certificate's row on every request, not at the handshake:
    one revoked since its session began is refused when the session is resumed."""
    _, client = _enrolled(setup, tmp_path / "id", "certs-p", "lab")
    seen = _exchanges(client)
    client.whoami()
    assert client.whoami()["provider"] == "lab" and seen[-1].resumed
    setup.admin().request("DELETE", "/api/namespaces/certs-p/providers/lab/tokens")
    with pytest.raises(ApiFailure) as refused:
        client.whoami()
    assert refused.value.status == 401 and seen[-1].resumed
