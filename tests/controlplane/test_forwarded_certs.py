"""A daemon's certificate behind a TLS-terminating proxy (docs/deploy.md, way 3): a
real ``lakeshore serve`` on plain HTTP on 127.0.0.1 with ``--client-cert-header
X-SSL-Client-Cert --trusted-proxy 127.0.0.1/32``, and the tests' proxy in front
(tests/tls_proxy.py) asking clients for a certificate and passing it on URL-escaped,
as nginx's ``$ssl_client_escaped_cert``. The daemon (nymph's Credentials and
Client) enrolls with a bootstrap token through the proxy and works by its
certificate alone. Refused, 401: the header from a peer not trusted (127.0.0.2),
a certificate of another CA, an expired one, a revoked one. A proxy on another
host (127.0.0.4, in a --trusted-proxy network) has its X-Forwarded-Proto and
X-Forwarded-For taken as the server's own machine has; from a peer not trusted
they are ignored."""

from __future__ import annotations

import datetime as dt
import http.client
import json
import subprocess
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_module
from dreamlake.controlplane.client import ApiFailure, Client
from dreamlake.controlplane.nymph.credentials import Credentials
from dreamlake.controlplane.nymph.keypair import KeyPair
from dreamlake.controlplane.server.identity.forwarded import (
    ForwardedConfigError,
    header_name,
    networks,
)
from lakeshore_fixtures import clean_env
from test_tls_serving import TlsServer, _serve, _stop
from tls_proxy import TLSProxy

HEADER = "X-SSL-Client-Cert"


@dataclass
class Setup:
    server: TlsServer
    proxy: TLSProxy

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def admin(self) -> Client:
        return Client(self.url, self.server.admin_token)

    def daemon(self, ns: str) -> Client:
        """A daemon's client, through the proxy."""
        return Client(self.proxy.url, ca=str(self.proxy.ca), namespace=ns)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("forwarded")
    # the settings from the environment; the flags are held by the test at the end
    env = {
        "LAKESHORE_CLIENT_CERT_HEADER": HEADER,
        "LAKESHORE_TRUSTED_PROXIES": "127.0.0.1/32 ::1 127.0.0.4/32",
    }
    server = _serve(tmp, probe=False, plain=True, env=env)
    client_ca = server.data_dir / "tls" / "client-ca.crt"
    try:
        said = server.output()
        assert f"come in the {HEADER} header from 127.0.0.1/32, ::1/128, 127.0.0.4/32" in said
        assert (
            "X-Forwarded-For are taken from 127.0.0.1/32, ::1/128, 127.0.0.4/32 and this "
            "machine only" in said
        )
        proxy = TLSProxy(
            ("127.0.0.1", server.port), tmp / "proxy", client_cert_header=HEADER,
            client_ca=client_ca,
        ).start()  # fmt: skip
    except BaseException:
        _stop(server)
        raise
    yield Setup(server, proxy)
    proxy.stop()
    _stop(server)


def _bootstrap(setup: Setup, ns: str, provider: str = "lab") -> str:
    admin = setup.admin()
    try:
        admin.create_namespace(ns)
    except ApiFailure as exc:
        assert exc.status == 409
    # as connect asks: the server decides, and it signs certificates
    out = admin.request(
        "POST",
        f"/api/namespaces/{ns}/tokens",
        {"scope": "bootstrap", "orDaemon": True, "provider": provider, "host": "host-a"},
    )
    assert out["scope"] == "bootstrap"
    return str(out["token"])


def _enrolled(setup: Setup, folder: Path, ns: str) -> Client:
    token = _bootstrap(setup, ns)
    client = setup.daemon(ns)
    Credentials(folder, ns, "lab", lambda: token).step(client)
    assert client.token is None and client.cert == str(folder / "daemon.pem")
    return client


def _direct(setup: Setup, value: str, *, source: str = "127.0.0.1", **headers: str) -> Any:
    """``GET /api/whoami`` straight to the server (no proxy) from ``source``, with
    ``value`` in the header: (status, problem)."""
    conn = http.client.HTTPConnection(
        "127.0.0.1", setup.server.port, timeout=30, source_address=(source, 0)
    )
    try:
        conn.request("GET", "/api/whoami", headers={HEADER: value, **headers})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read() or b"{}")
    finally:
        conn.close()


def _escaped(pem: bytes) -> str:
    return urllib.parse.quote(pem.decode(), safe="")


def _signed(setup: Setup, *, days: float, other_ca: bool) -> bytes:
    """A certificate for fwd-d/lab signed by the server's CA (unsealed from its
    database with its key) or by another, valid ``days`` from now."""
    from dreamlake.controlplane.db import make_engine, make_sessionmaker
    from dreamlake.controlplane.registry.crypto import SecretBox
    from dreamlake.controlplane.server import builtin_ca
    from dreamlake.controlplane.server.identity.issue import sign

    if other_ca:
        ca_pem, ca_key = builtin_ca.make_ca("another CA")
    else:
        data = setup.server.data_dir
        engine = make_engine(f"sqlite:///{data / 'lakeshore.db'}", 1)
        try:
            box = SecretBox((data / "secret.key").read_text().strip().encode())
            ca_pem, unseal = builtin_ca.shared_ca(make_sessionmaker(engine), box)
            ca_key = unseal()
        finally:
            engine.dispose()
    now = dt.datetime.now(dt.UTC) + dt.timedelta(days=days) - dt.timedelta(days=1)
    signed = sign(KeyPair().csr_pem("x"), ca_pem, ca_key, namespace="fwd-d", provider="lab",
                  instance=None, now=now)  # fmt: skip
    return signed.pem


def _refusals(setup: Setup, reason: str) -> float:
    """``lakeshore_certificate_refusals_total{reason}`` as the server's /metrics says."""
    import urllib.request

    req = urllib.request.Request(
        setup.url + "/metrics", headers={"Authorization": f"Bearer {setup.server.admin_token}"}
    )
    with urllib.request.urlopen(req, timeout=30) as answer:
        text = answer.read().decode()
    wanted = f'lakeshore_certificate_refusals_total{{reason="{reason}"}} '
    found = [line for line in text.splitlines() if line.startswith(wanted)]
    return float(found[0].split()[-1]) if found else 0.0


def test_a_daemon_behind_the_proxy_enrolls_and_works_by_its_certificate(
    setup: Setup, tmp_path: Path
) -> None:
    before = setup.proxy.forwarded
    client = _enrolled(setup, tmp_path / "id", "fwd-a")
    who = client.whoami()  # no Authorization header: the proxy's header alone
    assert (who["scope"], who["provider"]) == ("daemon", "lab")
    worker = client.register("lab", "i-1", host="host-a")["workerId"]
    client.heartbeat(worker)  # a POST with a body, by the certificate
    assert client.poll_work(worker, wait=0) is None
    assert setup.proxy.forwarded - before >= 4
    # renewed through the proxy with its current certificate (its token is spent)
    meta = json.loads((tmp_path / "id" / "daemon.json").read_text())
    (tmp_path / "id" / "daemon.json").write_text(json.dumps(meta | {"issuedAt": 0}))
    creds = Credentials(tmp_path / "id", "fwd-a", "lab", lambda: "spent")
    assert creds.due()
    creds.step(client)
    assert json.loads((tmp_path / "id" / "daemon.json").read_text())["serial"] != meta["serial"]
    client.heartbeat(worker)
    with pytest.raises(ApiFailure) as refused:
        client.register("other", "i-1")  # its provider's routes only
    assert refused.value.status == 403


def test_the_header_from_a_peer_not_trusted_is_refused(setup: Setup, tmp_path: Path) -> None:
    _enrolled(setup, tmp_path / "id", "fwd-b")
    pem = (tmp_path / "id" / "daemon.pem").read_bytes()
    cert = pem[: pem.index(b"-----END CERTIFICATE-----") + 26]
    assert _direct(setup, _escaped(cert))[0] == 200  # from the trusted proxy's address
    # as AWS's load balancer escapes it: + = / left as they are, the chain after it
    chain = cert + (setup.server.data_dir / "tls" / "client-ca.crt").read_bytes()
    assert _direct(setup, urllib.parse.quote(chain.decode(), safe="+=/"))[0] == 200
    status, body = _direct(setup, _escaped(cert), source="127.0.0.2")
    assert status == 401
    assert "only taken from a trusted proxy" in body["detail"]
    assert "127.0.0.2" in body["detail"]
    # never trusted, whatever else the request carries
    admin = f"Bearer {setup.server.admin_token}"
    assert _direct(setup, "", source="127.0.0.2", Authorization=admin)[0] == 401
    # without the header, the peer does not matter: a bearer token is a bearer token
    conn = http.client.HTTPConnection(
        "127.0.0.1", setup.server.port, timeout=30, source_address=("127.0.0.2", 0)
    )
    try:
        conn.request("GET", "/api/whoami", headers={"Authorization": admin})
        assert conn.getresponse().status == 200
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("other_ca", "days", "says"),
    [(True, 1, "not issued by this server's CA"), (False, -2, "has expired")],
    ids=["another-ca", "expired"],
)
def test_a_forwarded_certificate_of_another_ca_or_expired_is_refused(
    setup: Setup, other_ca: bool, days: float, says: str
) -> None:
    reason = "untrusted" if other_ca else "expired"
    counted = _refusals(setup, reason)
    pem = _signed(setup, days=days, other_ca=other_ca)
    status, body = _direct(setup, _escaped(pem))
    assert status == 401 and says in body["detail"], body
    assert _refusals(setup, reason) == counted + 1
    assert _direct(setup, "not a certificate")[0] == 401


def test_a_revoked_forwarded_certificate_is_refused_at_once(setup: Setup, tmp_path: Path) -> None:
    client = _enrolled(setup, tmp_path / "id", "fwd-e")
    client.whoami()  # known, and cached
    serial = json.loads((tmp_path / "id" / "daemon.json").read_text())["serial"]
    admin = setup.admin()
    (row,) = [t for t in admin.request("GET", "/api/tokens") if t["label"] == f"cert {serial}"]
    admin.request("DELETE", f"/api/tokens/{row['id']}")
    with pytest.raises(ApiFailure) as refused:
        client.whoami()
    assert refused.value.status == 401


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--client-cert-header", HEADER], "needs --trusted-proxy"),
        (["--client-cert-header", HEADER, "--trusted-proxy", "10.0.0.0/33"], "not an address"),
        (["--client-cert-header", "Authorization", "--trusted-proxy", "::1"], "not a header"),
    ],
    ids=["no-proxy", "bad-cidr", "bad-header"],
)
def test_serve_refuses_the_options_given_wrong(tmp_path: Path, argv: list[str], says: str) -> None:
    done = run_module(
        "dreamlake.cli.lakeshore.app", ["serve", "--port", "0", "--data-dir", str(tmp_path), *argv],
        env=clean_env(), text=True, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and says in done.stderr, done.stderr
    assert "next: lakeshore serve --client-cert-header" in done.stderr
    assert not (tmp_path / "lakeshore.db").exists()  # refused before anything is made


def test_the_options_are_checked() -> None:
    assert [str(n) for n in networks(["10.0.0.0/8", "127.0.0.1"])] == [
        "10.0.0.0/8",
        "127.0.0.1/32",
    ]
    assert header_name("X-Amzn-Mtls-Clientcert") == b"x-amzn-mtls-clientcert"
    for bad in ("Authorization", "X SSL", ""):
        with pytest.raises(ForwardedConfigError):
            header_name(bad)
    with pytest.raises(ForwardedConfigError, match="not an address or a network"):
        networks(["10.0.0.0/33"])


def test_a_daemon_behind_envoy_works_by_the_certificate_in_xfcc(
    setup: Setup, tmp_path: Path
) -> None:
    """The proxy sends Envoy's x-forwarded-client-cert (SANITIZE_SET, cert: true):
    the daemon enrolls and works by the certificate in its Cert."""
    with TLSProxy(
        ("127.0.0.1", setup.server.port), tmp_path / "envoy", client_cert_header=HEADER,
        client_ca=setup.server.data_dir / "tls" / "client-ca.crt", xfcc=True,
    ) as envoy:  # fmt: skip
        token = _bootstrap(setup, "fwd-x")
        client = Client(envoy.url, ca=str(envoy.ca), namespace="fwd-x")
        Credentials(tmp_path / "id", "fwd-x", "lab", lambda: token).step(client)
        assert client.token is None and client.cert is not None
        who = client.whoami()  # by the XFCC header alone
        assert (who["scope"], who["provider"]) == ("daemon", "lab")
        worker = client.register("lab", "i-1", host="host-a")["workerId"]
        client.heartbeat(worker)
        with pytest.raises(ApiFailure) as refused:
            client.register("other", "i-1")  # its provider's routes only
        assert refused.value.status == 403
        assert envoy.forwarded >= 3


def _xfcc(*elements: str) -> str:
    return ",".join(elements)


def test_xfcc_is_read_by_its_nearest_elements_cert(setup: Setup, tmp_path: Path) -> None:
    """Of several elements (APPEND_FORWARD) the last, the trusted proxy's own, is
    read: a certificate in an earlier one (the client's own header, passed on) is
    never believed. Keys in any case, values quoted or not."""
    _enrolled(setup, tmp_path / "id", "fwd-y")
    pem = (tmp_path / "id" / "daemon.pem").read_bytes()
    cert = _escaped(pem[: pem.index(b"-----END CERTIFICATE-----") + 26])
    forged = _escaped(_signed(setup, days=1, other_ca=True))
    mine = f'By=spiffe://edge;Hash=ab12;Cert="{cert}";Subject="CN=nymph lab, O=\\"x;y=z\\""'
    status, body = _direct(setup, mine)
    assert status == 200 and body["provider"] == "lab", body
    assert _direct(setup, f"hash=ab12;cert={cert};uri=lakeshore://fwd-y/lab")[0] == 200
    assert _direct(setup, _xfcc(f'Cert="{forged}"', mine))[0] == 200
    status, body = _direct(setup, _xfcc(mine, f'By=spiffe://edge;Cert="{forged}"'))
    assert status == 401 and "not issued by this server's CA" in body["detail"], body


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('By=spiffe://edge;Hash=ab12;Subject="CN=x"', "carries no Cert"),
        ('By=spiffe://edge;Cert=""', "carries no Cert"),
        ('Cert="%2D%2D",By=spiffe://edge;Hash=ab12', "carries no Cert"),
        ('By=spiffe://edge;Cert="abc', "not closed"),
        ("By=spiffe://edge;Cert=a;Cert=b", "more than once"),
    ],
    ids=["by-and-hash", "empty-cert", "cert-only-farther", "unclosed", "two-certs"],
)
def test_xfcc_without_a_certificate_is_refused_with_the_reason(
    setup: Setup, value: str, says: str
) -> None:
    status, body = _direct(setup, value)
    assert status == 401 and says in body["detail"], body
    assert HEADER in body["detail"]
    if says == "carries no Cert":
        assert "set_current_client_cert_details" in body["detail"]


def test_xfcc_and_escaped_pem_are_told_apart() -> None:
    from dreamlake.controlplane.server.identity.xfcc import XfccError, is_xfcc, nearest_cert

    assert is_xfcc(b"By=x;Cert=y") and is_xfcc(b" hash=1")
    assert not is_xfcc(b"-----BEGIN%20CERTIFICATE-----%0A") and not is_xfcc(b"")
    assert nearest_cert(b'Cert="a,b";By=x,By=y;Cert=c') == b"c"
    with pytest.raises(XfccError, match="By and Hash name a certificate"):
        nearest_cert(b"By=x;Hash=y")


def test_the_docs_give_envoys_lines_the_tests_proxy_follows() -> None:
    """docs/deploy.md's Envoy lines are the ones the tests' proxy acts out with
    ``xfcc=True`` (one element, its Cert, the client's own header replaced)."""
    import re

    import yaml

    page = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    (block,) = re.findall(r"```yaml\n(.*?)```", page, re.S)
    assert yaml.safe_load(block) == {
        "forward_client_cert_details": "SANITIZE_SET",
        "set_current_client_cert_details": {"cert": True},
    }
    assert "--client-cert-header x-forwarded-client-cert" in page
    assert header_name("x-forwarded-client-cert") == b"x-forwarded-client-cert"


def _nginx(page: str) -> dict[str, list[str]]:
    """docs/deploy.md's nginx block: each directive's arguments, by its name."""
    import re

    (block,) = re.findall(r"```nginx\n(.*?)```", page, re.S)
    directives: dict[str, list[str]] = {}
    for line in block.splitlines():
        line = line.strip()
        if line.endswith(";"):
            name, _, args = line.rstrip(";").partition(" ")
            directives.setdefault(name, []).append(args.strip())
    return directives


def _login(setup: Setup, source: str) -> str:
    """``POST /ui/login`` from ``source`` as a proxy in front would send it (the
    client it names is never reached): the session cookie's attributes."""
    conn = http.client.HTTPConnection(
        "127.0.0.1", setup.server.port, timeout=30, source_address=(source, 0)
    )
    try:
        body = urllib.parse.urlencode({"token": setup.server.admin_token})
        conn.request("POST", "/ui/login", body, {"X-Forwarded-Proto": "https",
                     "X-Forwarded-For": "198.51.100.7",
                     "Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
        answer = conn.getresponse()
        answer.read()
        assert answer.status == 303, answer.status
        return answer.getheader("Set-Cookie") or ""
    finally:
        conn.close()


def test_the_docs_nginx_block_is_what_the_server_needs(setup: Setup) -> None:
    """docs/deploy.md's nginx block against way 3's serve line and this server: it
    sets the header --client-cert-header names to nginx's URL-escaped PEM; it
    forwards to the address and port the line binds, an address --trusted-proxy
    lists; it waits longer than the longest long-poll and keeps idle upstream
    connections for less time than the server does; it verifies clients with the
    file the server writes; and its X-Forwarded-Proto makes the dashboard's cookie
    Secure (from a peer elsewhere the header is ignored)."""
    import ipaddress

    from dreamlake.controlplane.server.settings import MAX_WAIT_SECONDS, MIN_KEEP_ALIVE_SECONDS

    page = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    nginx = _nginx(page)
    serve = next(ln for ln in page.splitlines() if ln.startswith("lakeshore serve")
                 and f"--client-cert-header {HEADER}" in ln).split()  # fmt: skip
    host, port = serve[serve.index("--host") + 1], serve[serve.index("--port") + 1]
    trusted = ipaddress.ip_network(serve[serve.index("--trusted-proxy") + 1])
    sets = dict(args.split(None, 1) for args in nginx["proxy_set_header"])
    assert sets[HEADER] == "$ssl_client_escaped_cert"
    assert sets["Connection"] == '""' and nginx["proxy_http_version"] == ["1.1"]
    assert sets["X-Forwarded-Proto"] == "$scheme"
    (upstream,) = [line.split()[1] for line in page.splitlines() if line.startswith("upstream ")]
    assert nginx["proxy_pass"] == [f"http://{upstream}"]
    assert f"{host}:{port}" in nginx["server"] and ipaddress.ip_address(host) in trusted
    assert int(nginx["keepalive"][0]) > 0
    assert float(nginx["keepalive_timeout"][0].rstrip("s")) < MIN_KEEP_ALIVE_SECONDS
    assert float(nginx["proxy_read_timeout"][0].rstrip("s")) > MAX_WAIT_SECONDS + 5
    assert nginx["proxy_buffering"] == ["off"] and nginx["ssl_verify_client"] == ["optional"]
    (client_ca,) = nginx["ssl_client_certificate"]
    assert client_ca.endswith("/tls/client-ca.crt")
    assert (setup.server.data_dir / "tls" / "client-ca.crt").is_file()
    assert "Secure" in _login(setup, "127.0.0.1").split("; ")
    assert "Secure" not in _login(setup, "127.0.0.2").split("; ")


def test_a_proxy_on_another_host_in_a_trusted_network_forwards_its_scheme(
    setup: Setup,
) -> None:
    """The proxy at 127.0.0.4 (``--trusted-proxy 127.0.0.4/32``, standing for a load
    balancer on another host): its ``X-Forwarded-Proto: https`` makes the session
    cookie ``Secure``, as from this machine; from 127.0.0.2 (not trusted) the same
    headers are ignored. (uvicorn takes ``X-Forwarded-For`` on the same trust.)"""
    assert "Secure" in _login(setup, "127.0.0.4").split("; ")
    assert "Secure" not in _login(setup, "127.0.0.2").split("; ")


def test_trusted_proxies_are_parsed_as_the_option_is() -> None:
    from dreamlake.controlplane.server.fleet.serving import forwarded_from

    assert forwarded_from() == ["127.0.0.1", "::1"]
    # an address alone is its own network; host bits allowed, as --trusted-proxy takes them
    assert forwarded_from(["10.0.0.5", "10.0.0.5/24", "fd00::1"]) == [
        "127.0.0.1", "::1", "10.0.0.5/32", "10.0.0.0/24", "fd00::1/128",
    ]  # fmt: skip
    with pytest.raises(ForwardedConfigError):
        forwarded_from(["10.0.0.0/33"])


def test_serve_takes_trusted_proxies_without_a_certificate_header(tmp_path: Path) -> None:
    """``--trusted-proxy`` alone (a proxy that passes no certificates on): the server
    starts and says whose forwarded headers it takes; a bad network is refused with
    an example of the option alone."""
    from test_tls_serving import _stop

    server = _serve(tmp_path, "--trusted-proxy", "127.0.0.4", probe=False, plain=True)
    try:
        said = server.output()
        assert "X-Forwarded-For are taken from 127.0.0.4/32 and this machine only" in said
        assert "certificates also come in" not in said
    finally:
        _stop(server)
    done = run_module(
        "dreamlake.cli.lakeshore.app",
        ["serve", "--port", "0", "--data-dir", str(tmp_path / "bad"), "--trusted-proxy", "10.0.0.0/33"],
        env=clean_env(), text=True, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "not an address or a network" in done.stderr
    assert "next: lakeshore serve --trusted-proxy 10.0.0.0/24" in done.stderr
