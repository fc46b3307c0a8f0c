"""The built-in CA: made once per database and shared by every replica over it (the
key sealed with the secret key), a server certificate per data dir for the names
served, kept while current and made again when a name is missing; and
``lakeshore serve`` off loopback without a certificate serves HTTPS from it,
printing its fingerprint and path, unless ``--insecure-http`` (said at start and
in ``/readyz``). Loopback stays plain HTTP."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import Client, Untrusted
from dreamlake.controlplane.registry.crypto import SecretBox, generate_key
from dreamlake.controlplane.server import builtin_ca
from lakeshore_fixtures import clean_env, free_port, lakeshore_argv

# Linux routes all of 127.0.0.0/8 to the loopback interface: a server bound to this
# address is "off loopback" by name (the default host's rule) and never leaves it.
OFF_LOOPBACK = "127.0.0.2"


def _sessions(tmp: Path) -> Any:
    from dreamlake.controlplane.db import make_engine, make_sessionmaker, run_migrations, sqlite_url

    tmp.mkdir(parents=True, exist_ok=True)
    engine = make_engine(sqlite_url(tmp), 2)
    run_migrations(engine)
    return make_sessionmaker(engine)


def test_the_ca_is_made_once_and_shared_through_the_database(tmp_path: Path) -> None:
    from cryptography import x509

    sessions = _sessions(tmp_path / "db")
    box = SecretBox(generate_key())
    one = builtin_ca.ensure(tmp_path / "a", ["lake.example", "10.0.0.5"], sessions, box)
    assert one.ca_cert.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
    assert one.key.stat().st_mode & 0o777 == 0o600
    assert len(one.fingerprint.split(":")) == 32
    first = one.cert.read_bytes()
    cert = x509.load_pem_x509_certificate(one.cert.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["lake.example"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["10.0.0.5"]
    # the key in the database is sealed, never in clear text
    from dreamlake.controlplane.models import ServerMeta

    with sessions() as session:
        sealed = session.get(ServerMeta, builtin_ca.CA_KEY_ROW).value
    assert "PRIVATE KEY" not in sealed and json.loads(sealed)["keyId"] == box.key_id
    # the same data dir again: nothing is made anew
    again = builtin_ca.ensure(tmp_path / "a", ["lake.example", "10.0.0.5"], sessions, box)
    assert again.cert.read_bytes() == first
    # another replica over the database: the same CA, its own certificate
    other = builtin_ca.ensure(tmp_path / "b", ["lake.example"], sessions, box)
    assert other.fingerprint == one.fingerprint
    assert other.ca_cert.read_bytes() == one.ca_cert.read_bytes()
    assert other.cert.read_bytes() != first
    # a name the certificate lacks: made again, by the same CA
    wider = builtin_ca.ensure(tmp_path / "a", ["lake.example", "lb.example"], sessions, box)
    assert wider.cert.read_bytes() != first
    assert wider.fingerprint == one.fingerprint
    context = ssl.create_default_context(cafile=str(one.ca_cert))
    context.load_cert_chain(str(wider.cert), str(wider.key))  # a matching pair


def test_a_replica_with_another_secret_key_cannot_issue(tmp_path: Path) -> None:
    sessions = _sessions(tmp_path / "db")
    builtin_ca.ensure(tmp_path / "a", ["lake.example"], sessions, SecretBox(generate_key()))
    with pytest.raises(builtin_ca.BuiltinCaError, match="sealed with secret key id"):
        builtin_ca.ensure(tmp_path / "b", ["lake.example"], sessions, SecretBox(generate_key()))


def test_a_key_rotation_seals_the_cas_key_with_the_new_key(tmp_path: Path) -> None:
    from dreamlake.controlplane.server.access.keys import rotate_key

    sessions = _sessions(tmp_path / "db")
    old, new = generate_key(), generate_key()
    made = builtin_ca.ensure(tmp_path / "a", ["lake.example"], sessions, SecretBox(old))
    rotate_key(sessions.kw["bind"], old, new)
    # a replica on the new key alone issues from the same CA
    after = builtin_ca.ensure(tmp_path / "b", ["lake.example"], sessions, SecretBox(new))
    assert after.fingerprint == made.fingerprint
    with pytest.raises(builtin_ca.BuiltinCaError):
        builtin_ca.ensure(tmp_path / "c", ["lake.example"], sessions, SecretBox(old))


def test_served_names_cover_the_host_the_extras_and_loopback() -> None:
    import socket

    names = builtin_ca.served_names("10.1.2.3", ["lake.example", "10.1.2.3"])
    assert names[:2] == ["10.1.2.3", "lake.example"]
    assert socket.gethostname() in names
    assert {"localhost", "127.0.0.1", "::1"} <= set(names)
    assert "0.0.0.0" not in builtin_ca.served_names("0.0.0.0")


def _serve(tmp: Path, *extra: str, host: str = OFF_LOOPBACK) -> tuple[Any, int, Path, Path]:
    data_dir, log = tmp / f"data-{free_port()}", tmp / f"serve-{free_port()}.log"
    port, probe = free_port(), free_port()
    argv = [*lakeshore_argv(), "serve", "--host", host, "--port", str(port), "--probe-port",
            str(probe), "--data-dir", str(data_dir), *extra]  # fmt: skip
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=clean_env()
        )
    end = time.monotonic() + 90
    while time.monotonic() < end and "listening on" not in log.read_text():
        assert proc.poll() is None, log.read_text()
        time.sleep(0.2)
    return proc, port, data_dir, log


def _stop(proc: Any) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _until(call: Any, timeout: float = 30) -> Any:
    end = time.monotonic() + timeout
    while True:
        try:
            return call()
        except Exception:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def test_off_loopback_without_a_certificate_serves_the_built_in_cas(tmp_path: Path) -> None:
    proc, port, data_dir, log = _serve(tmp_path, "--tls-name", "lake.example")
    try:
        ca = data_dir / "tls" / "ca.crt"
        said = log.read_text()
        assert f"listening on https://{OFF_LOOPBACK}:{port}" in said
        fingerprint = builtin_ca.fingerprint(ca.read_bytes())
        assert f"fingerprint {fingerprint}" in said
        assert f"LAKESHORE_CA={ca}" in said
        assert "lake.example" in said
        url = f"https://{OFF_LOOPBACK}:{port}"
        assert _until(lambda: Client(url, ca=str(ca)).healthz())["status"] == "ok"
        with pytest.raises(Untrusted, match="does not verify"):
            Client(url).healthz()
    finally:
        _stop(proc)


def test_the_start_says_what_the_deploy_page_shows(tmp_path: Path) -> None:
    """docs/deploy.md's way 1: the three lines printed at the first start (the page's
    ``…`` and ``<…>`` stand for what differs), the certificate's names in the order
    ``served_names`` gives them (the page's example: ``0.0.0.0`` with ``--tls-name
    lakeshore.internal``), and the fingerprint the page's ``openssl`` command shows
    of ``ca.crt`` is the one printed."""
    import re
    import shutil

    page = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    shown = page.split("It makes a CA at the first start and prints, at every start, on stderr:")[1]
    lines = [ln.strip() for ln in shown.split("\n\n")[1].splitlines()]
    assert len(lines) == 3 and all(ln.startswith("TLS: ") for ln in lines), lines
    proc, _port, data_dir, log = _serve(tmp_path, "--tls-name", "lakeshore.internal")
    try:
        said = log.read_text()
    finally:
        _stop(proc)
    for line in lines:
        example = re.sub(r"(?:[0-9A-F]{2}:)+…", "…", line)  # "3F:A2:…": any fingerprint
        pattern = re.sub(r"(\\<[^>]*\\>|<[^>]*>|…)", ".+", re.escape(example))
        if not line.startswith("TLS: serving"):
            assert re.search(pattern, said), (line, said)
    names = builtin_ca.served_names(OFF_LOOPBACK, ["lakeshore.internal"])
    assert f"TLS: serving a certificate for {', '.join(names)}" in said
    wildcard = builtin_ca.served_names("0.0.0.0", ["lakeshore.internal"])
    page_names = lines[2].removeprefix("TLS: serving a certificate for ").split(", ")
    assert wildcard[0] == page_names[0] and wildcard[-2:] == page_names[-2:]
    assert {n for n in page_names if "<" not in n} <= set(wildcard)
    ca = data_dir / "tls" / "ca.crt"
    command = "openssl x509 -noout -fingerprint -sha256 -in ca.crt"
    assert f"`{command}`" in page
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: the fingerprint's command is not run")
    shown_by_openssl = subprocess.run(command.split(), cwd=ca.parent, capture_output=True,
                                      text=True, timeout=30, check=True).stdout  # fmt: skip
    fingerprint = shown_by_openssl.strip().split("=", 1)[1]
    assert f"TLS: built-in CA, SHA-256 fingerprint {fingerprint}\n" in said


def test_insecure_http_off_loopback_says_so_at_start_and_in_readyz(tmp_path: Path) -> None:
    proc, port, data_dir, log = _serve(tmp_path, "--insecure-http")
    try:
        assert "warning: --insecure-http: serving plain HTTP" in log.read_text()
        assert f"listening on http://{OFF_LOOPBACK}:{port}" in log.read_text()
        assert not (data_dir / "tls").exists()
        url = f"http://{OFF_LOOPBACK}:{port}/readyz"
        doc = _until(lambda: json.loads(urllib.request.urlopen(url, timeout=5).read()))
        assert doc["status"] == "ready" and doc["insecureHttp"] is True
        assert "clear text" in doc["warning"]
    finally:
        _stop(proc)


def test_loopback_stays_plain_http(tmp_path: Path) -> None:
    proc, port, data_dir, log = _serve(tmp_path, host="127.0.0.1")
    try:
        assert f"listening on http://127.0.0.1:{port}" in log.read_text()
        assert "TLS" not in log.read_text() and not (data_dir / "tls").exists()
        doc = _until(lambda: Client(f"http://127.0.0.1:{port}").healthz())
        assert doc["status"] == "ok"
    finally:
        _stop(proc)
