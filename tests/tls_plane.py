"""A real ``lakeshore serve`` over TLS on 127.0.0.1 with a CA of its own (the TLS
journeys' control plane), what a daemon's host holds once its client certificate
has ended, and the resume journey over such a certificate.

:func:`serving_tls` starts the server with ``--tls-cert`` / ``--tls-key`` for
``localhost`` and ``127.0.0.1`` (its daemons' certificates come from the built-in CA
it keeps in its database) and yields its URL, the CA file and the admin token file.

:func:`ended_certificate` is a certificate that server's own CA signed for a
provider, whose life ran out before now: what a daemon's ``daemon.pem`` /
``daemon.json`` are after it was suspended for longer than its certificate lives
(the server refuses it at the handshake, as it refuses any ended one). Written in
place of the daemon's files, it stands for the time that passed without the test
waiting for it (the server issues no certificate living under a minute).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving_tls(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """``lakeshore serve`` over TLS: {"url", "ca", "token_file", "data"}."""
    from dreamlake.controlplane.client import Client
    from dreamlake.controlplane.server.builtin_ca import issue_server, make_ca

    pki = tmp_path / "pki"
    pki.mkdir(parents=True)
    ca_pem, ca_key = make_ca("journey CA")
    cert, key = issue_server(ca_pem, ca_key, ["localhost", "127.0.0.1"])
    (pki / "ca.crt").write_bytes(ca_pem)
    (pki / "s.crt").write_bytes(cert)
    (pki / "s.key").write_bytes(key)
    (pki / "s.key").chmod(0o600)
    data, port = tmp_path / "data", _port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [str(BIN / "lakeshore"), "serve", "--port", str(port), "--data-dir", str(data),
         "--live-seconds", "2", "--tls-cert", str(pki / "s.crt"), "--tls-key", str(pki / "s.key")],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
    )  # fmt: skip
    url = f"https://127.0.0.1:{port}"
    end = time.monotonic() + 60
    while True:
        try:
            Client(url, ca=str(pki / "ca.crt"), timeout=2).healthz()
            break
        except Exception:
            assert proc.poll() is None and time.monotonic() < end, (
                tmp_path / "server.log"
            ).read_text()
            time.sleep(0.2)
    try:
        yield {"url": url, "ca": pki / "ca.crt", "token_file": data / "admin.token", "data": data}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
        log.close()


def ended_certificate(data: Path, provider: str, namespace: str = "default") -> tuple[bytes, str]:
    """(the ``daemon.pem`` and the ``daemon.json`` text) of a certificate the server
    in ``data`` signed for ``provider``, issued two days ago, ended a day ago."""
    from dreamlake.controlplane.db import make_engine, make_sessionmaker
    from dreamlake.controlplane.nymph.keypair import KeyPair
    from dreamlake.controlplane.registry.crypto import SecretBox
    from dreamlake.controlplane.server import builtin_ca
    from dreamlake.controlplane.server.identity.issue import sign

    engine = make_engine(f"sqlite:///{data / 'lakeshore.db'}", 1)
    try:
        secret = (data / "secret.key").read_text().strip().encode()
        ca_pem, unseal = builtin_ca.shared_ca(make_sessionmaker(engine), SecretBox(secret))
        ca_key = unseal()
    finally:
        engine.dispose()
    issued = dt.datetime.now(dt.UTC) - dt.timedelta(days=2)
    pair = KeyPair()
    signed = sign(pair.csr_pem(f"nymph {provider}"), ca_pem, ca_key, namespace=namespace,
                  provider=provider, instance=None, now=issued)  # fmt: skip
    meta = {
        "serial": f"{signed.serial:x}",
        "notAfter": signed.not_after.isoformat().replace("+00:00", "Z"),
        "identity": signed.uri,
        "issuedAt": issued.timestamp(),
    }
    return signed.pem + pair.key_pem(), json.dumps(meta, indent=2) + "\n"


def hold_ended_certificate(folder: Path, data: Path, provider: str) -> None:
    """Put :func:`ended_certificate` in the daemon's install ``folder`` (its files'
    modes kept: the pem 0600)."""
    pem, meta = ended_certificate(data, provider)
    (folder / "daemon.pem").write_bytes(pem)
    (folder / "daemon.pem").chmod(0o600)
    (folder / "daemon.json").write_text(meta)


def admin_of(plane: dict[str, Any]) -> Any:
    from dreamlake.controlplane.client import Client

    return Client(plane["url"], plane["token_file"].read_text().strip(), ca=str(plane["ca"]))


def bootstraps(admin: Any, name: str) -> list[dict[str, Any]]:
    rows = admin.request("GET", "/api/tokens", query={"revoked": "true"})
    return [t for t in rows if t.get("provider") == name and t["scope"] == "bootstrap"]


def resumed_after_the_certificate_ended(
    name: str,
    project: Path,
    folder: Path,
    plane: dict[str, Any],
    tmp_path: Path,
    *,
    cli: bool = False,
) -> None:
    """connect → suspend → the certificate ends (:func:`hold_ended_certificate` in
    the daemon's install ``folder``) → resume ends connected, by itself: the host
    got a second bootstrap token, spent on a new certificate, and the one it held
    before is refused at once. ``cli``: resume is ``dreamlake provider resume
    --json`` (its document), else the library's ``resume()``."""
    from dreamlake.controlplane.client import ApiFailure, Client
    from dreamlake.engine.verbs.connect import connect
    from dreamlake.engine.verbs.resume import resume
    from dreamlake.engine.verbs.status import status
    from dreamlake.engine.verbs.suspend import suspend

    admin = admin_of(plane)
    res = connect(name, cwd=project, watch=60)
    assert res.status == "connected", (res, res.notes)
    held = tmp_path / "held.pem"  # the certificate connect's token got, kept aside
    shutil.copy(folder / "daemon.pem", held)
    before = json.loads((folder / "daemon.json").read_text())["serial"]
    assert suspend(name, cwd=project).status == "suspended"

    hold_ended_certificate(folder, plane["data"], name)
    assert len(bootstraps(admin, name)) == 1  # connect's, spent

    if cli:
        out = subprocess.run(
            [str(BIN / "dreamlake"), "provider", "resume", "-n", name, "--json"],
            cwd=project, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert (doc["status"], doc["nextAction"]) == ("connected", None), doc
    else:
        res = resume(name, cwd=project, watch=60)
        assert (res.status, res.next_action) == ("connected", None), (res, res.notes)
        assert any("certificate ended" in n and "bootstrap token" in n for n in res.notes), (
            res.notes
        )
    # a second one-use bootstrap token, spent by the daemon on a new certificate
    tokens = bootstraps(admin, name)
    assert len(tokens) == 2 and all(t["revokedAt"] for t in tokens), tokens
    meta = json.loads((folder / "daemon.json").read_text())
    assert meta["serial"] != before and meta["identity"] == f"lakeshore://default/{name}"
    assert (folder / "daemon.pem").stat().st_mode & 0o777 == 0o600
    # the certificate the host held before is not usable any more
    with pytest.raises(ApiFailure) as refused:
        Client(plane["url"], ca=str(plane["ca"]), cert=str(held)).whoami()
    assert refused.value.status == 401
    out = status(name, cwd=project, probe=False)
    assert (out.status, out.next_action) == ("connected", None), out
    item = admin.submit_work(name, "echo back > back.txt", queue="default")
    assert admin.get_work(str(item["id"]), wait=30)["state"] == "succeeded"
    log = (folder / "nymph.log").read_text()
    assert "has ended and its bootstrap token was refused" not in log, log
