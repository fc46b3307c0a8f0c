"""``lakeshore serve`` over real TLS on loopback: with a certificate the test makes
(``--tls-cert``/``--tls-key``), on the main port's socket group and the probe
port; every client verifies it (the daemon's connection, the ``lakeshore`` CLI,
``dreamlake``'s reads), a client with another CA is refused with a clear error,
plain HTTP to the TLS port is a clear error at once, and the certificate is
reloaded on SIGHUP and on a changed file without a restart.

One TLS server serves the module: the reload test and the test of the CLI's
advice for a wrong name or an ended certificate replace the pair it serves and
put a good one back."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_module
from dreamlake.controlplane.client import Client, Unreachable, Untrusted
from dreamlake.controlplane.server.builtin_ca import issue_server, make_ca
from lakeshore_fixtures import (
    ServerProc,
    clean_env,
    free_port,
    lakeshore_argv,
    nymph_argv,
    wait_until,
)

pytestmark = pytest.mark.slow


@dataclass
class Pki:
    folder: Path
    ca: Path
    cert: Path
    key: Path
    other_ca: Path


def _pki(folder: Path, names: list[str]) -> Pki:
    folder.mkdir(parents=True, exist_ok=True)
    ca_pem, ca_key = make_ca("test CA")
    cert, key = issue_server(ca_pem, ca_key, names)
    other_pem, _ = make_ca("another CA")
    paths = {n: folder / n for n in ("ca.crt", "server.crt", "server.key", "other.crt")}
    paths["ca.crt"].write_bytes(ca_pem)
    paths["server.crt"].write_bytes(cert)
    paths["server.key"].write_bytes(key)
    paths["server.key"].chmod(0o600)
    paths["other.crt"].write_bytes(other_pem)
    pki = Pki(folder, *paths.values())
    pki._ca_key = ca_key  # type: ignore[attr-defined]
    return pki


@dataclass
class TlsServer:
    proc: subprocess.Popen[bytes]
    data_dir: Path
    port: int
    probe_port: int
    log: Path
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    @property
    def admin_token(self) -> str:
        return (self.data_dir / "admin.token").read_text().strip()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def _serve(tmp: Path, *extra: str, host: str = "127.0.0.1", env: dict[str, str] | None = None,
           probe: bool = True, ca: Path | None = None, plain: bool = False,
           db: str | None = None, check: bool = True) -> TlsServer:  # fmt: skip
    data_dir = tmp / f"data-{free_port()}"
    port, probe_port = free_port(), free_port()
    log = tmp / f"server-{port}.log"
    argv = [*lakeshore_argv(), "serve", "--host", host, "--port", str(port),
            "--data-dir", str(data_dir), *extra]  # fmt: skip
    if probe:
        argv += ["--probe-port", str(probe_port)]
    if db:
        argv += ["--db", db]
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=clean_env(**(env or {}))
        )
    server = TlsServer(proc, data_dir, port, probe_port, log, host)
    scheme = "http" if plain else "https"

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"lakeshore exited:\n{server.output()}")
        if "listening on" not in server.output():
            return False
        if not check:  # a server no client can verify (its certificate is wrong on purpose)
            return True
        url = f"{scheme}://{host}:{port}"
        ca_now = ca or (data_dir / "tls" / "ca.crt")
        Client(url, ca=str(ca_now) if scheme == "https" else None, timeout=2).healthz()
        return True

    end = time.monotonic() + 90
    while time.monotonic() < end:
        try:
            if up():
                return server
        except AssertionError:
            raise
        except Exception:
            time.sleep(0.2)
    _stop(server)
    raise AssertionError(f"lakeshore did not answer:\n{server.output()}")


def _stop(server: TlsServer) -> None:
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(15)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return _pki(tmp_path_factory.mktemp("pki"), ["localhost", "127.0.0.1"])


@dataclass
class Served:
    """The pair the module's server serves: its own copy of the test CA's pair, which
    the reload and CLI tests replace (and put back) while it runs."""

    cert: Path
    key: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Served:
    folder = tmp_path_factory.mktemp("served")
    pair = Served(folder / "server.crt", folder / "server.key")
    pair.cert.write_bytes(pki.cert.read_bytes())
    pair.key.write_bytes(pki.key.read_bytes())
    pair.key.chmod(0o600)
    return pair


@pytest.fixture(scope="module")
def tls_server(
    tmp_path_factory: pytest.TempPathFactory, pki: Pki, served: Served
) -> Iterator[TlsServer]:
    tmp = tmp_path_factory.mktemp("tls")
    server = _serve(tmp, "--tls-cert", str(served.cert), "--tls-key", str(served.key), ca=pki.ca)
    yield server
    _stop(server)


def _peer_serial(host: str, port: int, ca: Path) -> int:
    context = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection((host, port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=host) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
    from cryptography import x509

    assert der is not None
    return int(x509.load_der_x509_certificate(der).serial_number)


def _lakeshore(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*lakeshore_argv(), *args], capture_output=True, text=True, env=clean_env(**env),
        stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip


# -- serving ------------------------------------------------------------------------


def test_both_ports_serve_https_and_announce_it(tls_server: TlsServer, pki: Pki) -> None:
    assert f"listening on https://127.0.0.1:{tls_server.port}" in tls_server.output()
    assert Client(tls_server.url, ca=str(pki.ca)).healthz()["status"] == "ok"
    probe = ssl.create_default_context(cafile=str(pki.ca))
    import urllib.request

    with urllib.request.urlopen(
        f"https://127.0.0.1:{tls_server.probe_port}/readyz", context=probe, timeout=5
    ) as r:
        doc = json.loads(r.read())
    assert doc["status"] == "ready" and "insecureHttp" not in doc


def test_tls_below_1_2_is_refused(tls_server: TlsServer, pki: Pki) -> None:
    import warnings

    context = ssl.create_default_context(cafile=str(pki.ca))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # asking for old TLS on purpose
        context.minimum_version = ssl.TLSVersion.TLSv1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    with (
        socket.create_connection(("127.0.0.1", tls_server.port), timeout=5) as raw,
        pytest.raises(ssl.SSLError),
    ):
        context.wrap_socket(raw, server_hostname="127.0.0.1")


def test_plain_http_to_the_tls_ports_is_a_clear_error_at_once(tls_server: TlsServer) -> None:
    for port in (tls_server.port, tls_server.probe_port):
        started = time.monotonic()
        with pytest.raises(Untrusted, match="use its https:// URL") as caught:
            Client(f"http://127.0.0.1:{port}", timeout=30).healthz()
        assert time.monotonic() - started < 5  # closed at once, never held
        assert caught.value.advice == f"use https://127.0.0.1:{port}"


def test_tls_to_a_plain_server_is_a_clear_error(shared_server_sqlite: ServerProc) -> None:
    """The plain server: the session's shared one (a ClientHello is all it gets)."""
    with pytest.raises(Untrusted, match="does not answer in TLS"):
        Client(f"https://127.0.0.1:{shared_server_sqlite.port}").healthz()


# -- clients verify -----------------------------------------------------------------


def test_a_client_with_another_ca_or_none_is_refused(tls_server: TlsServer, pki: Pki) -> None:
    with pytest.raises(Untrusted, match="does not verify") as caught:
        Client(tls_server.url, ca=str(pki.other_ca)).healthz()
    assert "LAKESHORE_CA" in caught.value.advice
    assert str(pki.other_ca) in caught.value.message
    with pytest.raises(Untrusted, match="system's trust store does not verify"):
        Client(tls_server.url).healthz()
    with pytest.raises(Untrusted, match="cannot be read"):
        Client(tls_server.url, ca=str(pki.folder / "missing.crt")).healthz()
    with pytest.raises(Untrusted, match="not a PEM certificate"):
        Client(tls_server.url, ca=str(pki.key)).healthz()
    assert issubclass(Untrusted, Unreachable)


def test_lakeshore_ca_is_read_from_the_environment(
    tls_server: TlsServer, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAKESHORE_CA", str(pki.ca))
    assert Client(tls_server.url).healthz()["status"] == "ok"
    monkeypatch.setenv("LAKESHORE_CA", str(pki.other_ca))
    with pytest.raises(Untrusted):
        Client(tls_server.url).healthz()


def test_the_daemons_connection_registers_heartbeats_and_claims(
    tls_server: TlsServer, pki: Pki
) -> None:
    daemon = Client(tls_server.url, tls_server.admin_token, keep_alive=True, ca=str(pki.ca))
    worker = daemon.register("tls-box", "i-tls", queues=["gpu"])
    beats = daemon.sibling()
    for _ in range(3):
        beats.heartbeat(worker["workerId"])
    assert beats.connection.opened == 1  # one TLS connection kept for every beat
    claims = Client(tls_server.url, tls_server.admin_token, ca=str(pki.ca)).claims("tls-box")
    assert claims["live"] == 1
    daemon.deregister(worker["workerId"])


def test_a_real_nymph_works_over_tls_and_refuses_a_wrong_ca(
    tls_server: TlsServer, pki: Pki, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text(tls_server.admin_token + "\n")
    token.chmod(0o600)
    base = [*nymph_argv(), "--server", tls_server.url, "--token-file", str(token),
            "--provider", "tls-nymph", "--poll-wait", "2", "--max-backoff", "1"]  # fmt: skip
    admin = Client(tls_server.url, tls_server.admin_token, ca=str(pki.ca))
    log = tmp_path / "nymph.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [*base, "--ca", str(pki.ca), "--instance-id", "good"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=clean_env(),
        )  # fmt: skip
    try:
        assert wait_until(lambda: admin.claims("tls-nymph")["live"] == 1, 60), log.read_text()
        work = admin.submit_work("tls-nymph", "echo over-tls")
        done = admin.get_work(work["id"], wait=30)
        assert done["exitCode"] == 0 and "over-tls" in done["outputTail"]
    finally:
        proc.terminate()
        proc.wait(15)
    wrong_log = tmp_path / "wrong.log"
    with open(wrong_log, "ab") as out:
        wrong = subprocess.Popen(
            [*base, "--instance-id", "wrong"], stdin=subprocess.DEVNULL, stdout=out,
            stderr=out, env=clean_env(LAKESHORE_CA=str(pki.other_ca)),
        )  # fmt: skip
    try:
        assert wait_until(lambda: "does not verify" in wrong_log.read_text(), 30), (
            wrong_log.read_text()
        )
        assert "Traceback" not in wrong_log.read_text()
        assert admin.claims("tls-nymph")["live"] == 0
    finally:
        wrong.kill()
        wrong.wait()
    missing = subprocess.run(
        [*base, "--ca", str(tmp_path / "nope.crt")], capture_output=True, text=True,
        env=clean_env(), stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert missing.returncode == 2
    assert "cannot be read" in missing.stderr and "LAKESHORE_CA" in missing.stderr
    assert "give --ca" in missing.stderr and ".dreamrc" not in missing.stderr


def test_the_lakeshore_cli_verifies(tls_server: TlsServer, pki: Pki) -> None:
    args = ("namespaces", "list", "--server", tls_server.url, "--data-dir",
            str(tls_server.data_dir))  # fmt: skip
    good = _lakeshore(*args, env={"LAKESHORE_CA": str(pki.ca)})
    assert good.returncode == 0 and "default" in good.stdout, good.stderr
    bad = _lakeshore(*args, "--json", env={"LAKESHORE_CA": str(pki.other_ca)})
    assert bad.returncode == 1
    assert "Traceback" not in bad.stderr
    doc = json.loads(bad.stdout)
    assert doc["kind"] == "lakeshore_untrusted"
    assert "does not verify" in doc["error"]
    # the next action is the same command, trusting the CA (this server's own
    # certificate's: none under the data dir, so a copy of it, said beside)
    again, _, beside = doc["nextAction"]["command"].partition("   # ")
    assert again.startswith("LAKESHORE_CA=ca.crt ") and again.endswith("namespaces list "
        f"--server {tls_server.url} --data-dir {tls_server.data_dir} --json")  # fmt: skip
    assert "tls/ca.crt on the server" in beside
    none = _lakeshore(*args, env={})
    assert none.returncode == 1 and "does not verify" in none.stderr
    assert "next: LAKESHORE_CA=" in none.stderr


def test_the_lakeshore_cli_has_a_next_action_for_a_missing_ca_and_the_wrong_scheme(
    tls_server: TlsServer, pki: Pki, shared_server_sqlite: ServerProc
) -> None:
    """A CA file that is missing or not a certificate, plain HTTP to the TLS port
    and TLS to a plain server: each a sentence and a command to run next (not
    advice alone), the URL fixed where it was given (``--server`` or
    ``LAKESHORE_URL``), no traceback."""
    from cli_fork import run_module

    def run(*args: str, **env: str) -> dict[str, Any]:
        done = run_module(
            "dreamlake.cli.lakeshore.app", [*args, "--json"], env=clean_env(**env),
            text=True, stdin=subprocess.DEVNULL, timeout=60,
        )  # fmt: skip
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        doc: dict[str, Any] = json.loads(done.stdout)
        assert doc["kind"] == "lakeshore_untrusted" and doc["nextAction"]["kind"] == "run"
        return doc

    listing = ("namespaces", "list", "--data-dir", str(tls_server.data_dir))
    missing = run(*listing, "--server", tls_server.url, LAKESHORE_CA=str(pki.folder / "no.crt"))
    assert "cannot be read" in missing["error"]
    assert missing["nextAction"]["command"].startswith("LAKESHORE_CA=")
    not_pem = run(*listing, "--server", tls_server.url, LAKESHORE_CA=str(pki.key))
    assert "not a PEM certificate" in not_pem["error"]
    assert not_pem["nextAction"]["command"].startswith("LAKESHORE_CA=")
    plain = f"http://127.0.0.1:{tls_server.port}"
    flag = run(*listing, "--server", plain, LAKESHORE_CA=str(pki.ca))
    assert "use its https:// URL" in flag["error"]
    assert flag["nextAction"]["command"] == (
        f"lakeshore namespaces list --data-dir {tls_server.data_dir} --server "
        f"{tls_server.url} --json"
    )
    env = run(*listing, LAKESHORE_URL=plain, LAKESHORE_CA=str(pki.ca))
    assert env["nextAction"]["command"].startswith(f"LAKESHORE_URL={tls_server.url} lakeshore ")
    to_plain = run(*listing, "--server", f"https://127.0.0.1:{shared_server_sqlite.port}")
    assert "does not answer in TLS" in to_plain["error"]
    assert (
        f"--server http://127.0.0.1:{shared_server_sqlite.port} "
        in (to_plain["nextAction"]["command"])
    )


def test_prometheus_scrapes_as_the_metrics_page_configures_it(
    tls_server: TlsServer, pki: Pki, tmp_path: Path
) -> None:
    """docs/metrics.md's scrape config, followed as Prometheus follows it, against
    a server on its own certificate: the token the page's command mints, as
    ``authorization.credentials_file``, the server verified with
    ``tls_config.ca_file``, on the main port; the probe port in HTTPS without it."""
    import re
    import urllib.request

    import yaml
    from cli_fork import run_module

    page = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    command = next(
        ln.strip() for ln in page.splitlines() if "tokens create" in ln and "--metrics" in ln
    )
    words = command.split()
    assert words[:3] == ["lakeshore", "tokens", "create"], command
    minted = run_module(
        "dreamlake.cli.lakeshore.app", [*words[1:], "--server", tls_server.url, "--data-dir",
        str(tls_server.data_dir)], env=clean_env(LAKESHORE_CA=str(pki.ca)), text=True,
        stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert minted.returncode == 0, minted.stderr
    (block,) = re.findall(r"```yaml\n(.*?)```", page, re.S)
    (job,) = yaml.safe_load(block)["scrape_configs"]
    assert job["scheme"] == "https" and set(job["tls_config"]) == {"ca_file"}
    credentials = tmp_path / Path(job["authorization"]["credentials_file"]).name
    credentials.write_text(minted.stdout.strip().splitlines()[-1] + "\n")
    context = ssl.create_default_context(cafile=str(pki.ca))  # tls_config.ca_file

    def scrape(port: int, token: str | None) -> str:
        request = urllib.request.Request(f"{job['scheme']}://127.0.0.1:{port}/metrics")
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=30, context=context) as answer:
            assert answer.status == 200
            return str(answer.read().decode())

    assert "lakeshore_http_request_duration_seconds" in scrape(
        tls_server.port, credentials.read_text().strip()
    )
    assert "lakeshore_" in scrape(tls_server.probe_port, None)


def test_on_the_servers_machine_the_cli_uses_loopback_and_the_admin_token(
    tls_server: TlsServer, pki: Pki, tmp_path: Path
) -> None:
    """docs/deploy.md's line for the server's own machine, run as a shell runs it
    (the data dir the default one under a HOME of the test's): the https:// loopback
    URL, the CA, and no token given: the admin token under the data dir is used."""
    import re
    import shutil

    page = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    (line,) = re.findall(r"^\s*(LAKESHORE_URL=https://127\.0\.0\.1:\S+ .*)$", page, re.M)
    home = tmp_path / "home"
    data_dir = home / ".local" / "share" / "lakeshore"
    (data_dir / "tls").mkdir(parents=True)
    shutil.copy(pki.ca, data_dir / "tls" / "ca.crt")  # the server's CA, where the line looks
    shutil.copy(tls_server.data_dir / "admin.token", data_dir / "admin.token")
    env = clean_env(HOME=str(home), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    for k in ("LAKESHORE_TOKEN", "LAKESHORE_TOKEN_FILE", "LAKESHORE_DATA_DIR", "XDG_DATA_HOME"):
        env.pop(k, None)
    line = line.replace("https://127.0.0.1:7878", tls_server.url)
    done = subprocess.run(["sh", "-c", line], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)  # fmt: skip
    assert done.returncode == 0 and "admin" in done.stdout, done.stderr


def test_dreamlake_reads_claims_over_tls(tls_server: TlsServer, pki: Pki, tmp_path: Path) -> None:
    """``dreamlake provider status`` reaches the TLS server with the CA from
    ``LAKESHORE_CA`` or from ``.dreamrc`` ``lakeshore.ca``; with another CA it is
    degraded (no-lakeshore), never a traceback."""
    proj = tmp_path / "proj"
    proj.mkdir()
    token_file = tmp_path / "token"
    token_file.write_text(tls_server.admin_token)
    exe = Path(sys.executable).parent / "dreamlake"

    def dreamlake(env: dict[str, str], *args: str) -> dict[str, object]:
        full = clean_env(HOME=str(tmp_path), LAKESHORE_TOKEN_FILE=str(token_file), **env)
        full.pop("DREAMRC", None)
        out = subprocess.run(
            [str(exe), *args, "--json"], cwd=proj, env=full, capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=120,
        )  # fmt: skip
        assert out.stdout, out.stderr
        assert "Traceback" not in out.stderr
        return json.loads(out.stdout)  # type: ignore[no-any-return]

    env = {"LAKESHORE_URL": tls_server.url, "LAKESHORE_CA": str(pki.ca)}
    dreamlake(env, "provider", "create", "-n", "tlswatch", "--provider", "ssh")
    Client(tls_server.url, tls_server.admin_token, ca=str(pki.ca)).register("tlswatch", "b-1")
    seen = dreamlake(env, "provider", "status", "-n", "tlswatch")
    assert seen["status"] == "connected", seen
    assert seen["server"] == tls_server.url

    (proj / ".dreamrc").write_text(f"lakeshore:\n  url: {tls_server.url}\n  ca: ca.crt\n")
    (proj / "ca.crt").write_bytes(pki.ca.read_bytes())
    from_rc = dreamlake({}, "provider", "status", "-n", "tlswatch")
    assert from_rc["status"] == "connected", from_rc

    wrong = dreamlake({**env, "LAKESHORE_CA": str(pki.other_ca)}, "provider", "status",
                      "-n", "tlswatch")  # fmt: skip
    assert wrong["status"] != "connected"
    assert {"no-lakeshore", "lakeshore-untrusted"} <= set(wrong.get("degraded") or [])
    listed = subprocess.run(
        [str(exe), "provider", "list", "--json"], cwd=proj, capture_output=True, text=True,
        env=clean_env(HOME=str(tmp_path), LAKESHORE_TOKEN_FILE=str(token_file),
                      **{**env, "LAKESHORE_CA": str(pki.other_ca)}),
        stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    (row,) = json.loads(listed.stdout)
    assert {"no-lakeshore", "lakeshore-untrusted"} <= set(row["degraded"]), row  # list says it too
    down = dreamlake({**env, "LAKESHORE_URL": f"https://127.0.0.1:{free_port()}"},
                     "provider", "status", "-n", "tlswatch")  # fmt: skip
    assert down["degraded"] == ["no-lakeshore"]  # not reached at all: no TLS reason


# -- reloading ------------------------------------------------------------------------


def _install(served: Served, cert: bytes, key: bytes) -> int:
    """Replace the served pair (each file atomically); the new certificate's serial."""
    from cryptography import x509

    tmp_cert, tmp_key = served.cert.with_name("cert.new"), served.key.with_name("key.new")
    tmp_cert.write_bytes(cert)
    tmp_key.write_bytes(key)
    tmp_key.chmod(0o600)
    os.replace(tmp_key, served.key)
    os.replace(tmp_cert, served.cert)
    return int(x509.load_pem_x509_certificate(cert).serial_number)


def _replace_cert(pki: Pki, served: Served, names: list[str]) -> int:
    cert, key = issue_server(pki.ca.read_bytes(), pki._ca_key, names)  # type: ignore[attr-defined]
    return _install(served, cert, key)


def _serving(server: TlsServer, serial: int, timeout: float = 10) -> bool:
    """Whether the server's main port comes to present ``serial`` (not verified:
    the pair may be for another name, or ended)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE

    def presented() -> bool:
        from cryptography import x509

        with (
            socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw,
            context.wrap_socket(raw) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
        assert der is not None
        return int(x509.load_der_x509_certificate(der).serial_number) == serial

    return wait_until(presented, timeout)


def _put_back(server: TlsServer, pki: Pki, served: Served) -> None:
    """The module's server serves a good pair of the test CA again."""
    serial = _replace_cert(pki, served, ["localhost", "127.0.0.1"])
    server.proc.send_signal(signal.SIGHUP)
    assert _serving(server, serial), server.output()


def test_the_certificate_reloads_on_sighup_and_on_a_changed_file(
    tls_server: TlsServer, pki: Pki, served: Served
) -> None:
    """On the module's server (its pair is put back at the end)."""
    server = tls_server
    try:
        first = _peer_serial("127.0.0.1", server.port, pki.ca)
        kept = Client(server.url, ca=str(pki.ca), keep_alive=True)
        kept.healthz()
        # a changed file, no signal: the watcher loads it within seconds
        second = _replace_cert(pki, served, ["localhost", "127.0.0.1"])
        assert second != first
        assert wait_until(lambda: _peer_serial("127.0.0.1", server.port, pki.ca) == second, 15)
        assert wait_until(lambda: _peer_serial("127.0.0.1", server.probe_port, pki.ca) == second, 5)
        kept.healthz()  # an open connection keeps going
        # SIGHUP
        third = _replace_cert(pki, served, ["localhost", "127.0.0.1"])
        server.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: _peer_serial("127.0.0.1", server.port, pki.ca) == third, 5)
        assert server.proc.poll() is None
        # a broken pair is refused, the last good one served
        refused = server.output().count("not reloaded")
        served.cert.write_text("not a certificate")
        server.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: server.output().count("not reloaded") > refused, 10)
        assert _peer_serial("127.0.0.1", server.port, pki.ca) == third
    finally:
        _put_back(server, pki, served)


# -- flags -----------------------------------------------------------------------------


def test_half_a_pair_or_a_pair_with_insecure_http_is_refused(tmp_path: Path, pki: Pki) -> None:
    for args, says in (
        (["--tls-cert", str(pki.cert)], "--tls-cert and --tls-key go together"),
        (["--tls-key", str(pki.key)], "--tls-cert and --tls-key go together"),
        (["--tls-cert", str(pki.cert), "--tls-key", str(pki.key), "--insecure-http"],
         "--insecure-http serves plain HTTP"),
        # --tls-name is the built-in CA's: with another certificate it would do nothing
        (["--tls-cert", str(pki.cert), "--tls-key", str(pki.key), "--tls-name", "lake.example"],
         "that certificate's own names must cover it"),
        (["--host", "127.0.0.2", "--insecure-http", "--tls-name", "lake.example"],
         "which is not served with --insecure-http"),
    ):  # fmt: skip
        out = run_module("dreamlake.cli.lakeshore.app", ["serve", "--port", str(free_port()),
                         "--data-dir", str(tmp_path), *args], env=clean_env(), text=True,
                         stdin=subprocess.DEVNULL, timeout=60)  # fmt: skip
        assert out.returncode == 1 and says in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and "next: lakeshore serve" in out.stderr


def test_a_certificate_that_does_not_load_is_a_clear_error(tmp_path: Path, pki: Pki) -> None:
    out = _lakeshore(
        "serve", "--port", str(free_port()), "--data-dir", str(tmp_path / "d"),
        "--tls-cert", str(pki.other_ca), "--tls-key", str(pki.key), env={},
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    assert "not a PEM certificate and its private key" in out.stderr
    assert "next: lakeshore serve --tls-cert" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_certificate_ended_or_ending_soon_is_said(pki: Pki, tmp_path: Path) -> None:
    """``lakeshore serve`` says at start (and at each reload) when its own
    certificate has ended, is not valid yet, or ends within 14 days."""
    from dreamlake.controlplane.server.tls import dates_warning

    crt, _ = _expired_pair(pki, tmp_path / "expired")
    ended = dates_warning(crt)
    assert ended is not None and "ended at" in ended and "SIGHUP" in ended
    assert dates_warning(pki.cert) is None  # a year and more to go
    soon = dates_warning(pki.cert, soon_days=400)
    assert soon is not None and soon.startswith(f"{pki.cert} ends at ")
    assert dates_warning(tmp_path / "missing.crt") is None  # loading it says why


def _expired_pair(pki: Pki, folder: Path) -> tuple[Path, Path]:
    """A server certificate of the test CA for 127.0.0.1 that ended yesterday."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=3))
        .not_valid_after(now - dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(pki._ca_key, hashes.SHA256())  # type: ignore[attr-defined]
    )
    folder.mkdir(parents=True, exist_ok=True)
    crt, pem = folder / "expired.crt", folder / "expired.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    pem.chmod(0o600)
    return crt, pem


def test_the_lakeshore_cli_names_the_fix_of_each_tls_failure(
    tls_server: TlsServer, pki: Pki, served: Served, tmp_path: Path
) -> None:
    """A name the certificate lacks and a certificate that has ended each get their
    own sentence and next action (the unknown CA: test_the_lakeshore_cli_verifies).
    The module's server serves each pair in turn (SIGHUP), then its own again."""
    env = {"LAKESHORE_CA": str(pki.ca)}
    cert, key = issue_server(pki.ca.read_bytes(), pki._ca_key, ["lakeshore.test"])  # type: ignore[attr-defined]
    crt, pem = _expired_pair(pki, tmp_path / "expired")
    try:
        # a certificate for lakeshore.test, asked for as 127.0.0.1
        serial = _install(served, cert, key)
        tls_server.proc.send_signal(signal.SIGHUP)
        assert _serving(tls_server, serial), tls_server.output()
        url = tls_server.url
        mismatch = _lakeshore("namespaces", "list", "--server", url, "--json", env=env)
        doc = json.loads(mismatch.stdout)
        assert mismatch.returncode == 1 and "Traceback" not in mismatch.stderr
        assert "mismatch" in doc["error"].lower()
        assert doc["nextAction"]["command"].startswith("lakeshore serve --tls-name 127.0.0.1")
        # a certificate that ended yesterday
        serial = _install(served, crt.read_bytes(), pem.read_bytes())
        tls_server.proc.send_signal(signal.SIGHUP)
        assert _serving(tls_server, serial), tls_server.output()
        ended = _lakeshore("namespaces", "list", "--server", url, "--json", env=env)
        doc = json.loads(ended.stdout)
        assert ended.returncode == 1 and "expired" in doc["error"]
        assert doc["nextAction"]["command"].startswith("lakeshore serve ")
        # and the server said so when it loaded it
        assert wait_until(lambda: "every client refuses it" in tls_server.output(), 30)
    finally:
        _put_back(tls_server, pki, served)
