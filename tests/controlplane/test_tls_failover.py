"""A replica killed under daemons on TLS: two ``lakeshore serve`` replicas over one
PostgreSQL serve HTTPS; real ``nymph`` daemons, given both URLs (replica A first),
exchange their bootstrap tokens for client certificates and work through A. A is
killed with SIGKILL; each daemon moves to B with the certificate it has (its
bootstrap token is spent, so nothing else could let it in), no certificate is asked
for again, and work submitted afterwards runs exactly once."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from lakeshore_fixtures import SHARED_KEY, NymphProc, nymph_argv, wait_until
from test_tls_serving import TlsServer, _pki, _serve, _stop

pytestmark = [pytest.mark.needs_postgres, pytest.mark.slow]

NS = "failover"
DAEMONS = 3


def _cert_rows(admin: Client) -> list[dict[str, Any]]:
    """The namespace's client certificates (each is a token row labelled ``cert``)."""
    rows = admin.request("GET", "/api/tokens")
    return [r for r in rows if r["namespace"] == NS and str(r["label"]).startswith("cert ")]


def test_daemons_move_to_the_other_replica_with_their_certificates(
    postgres: Any, tmp_path: Path
) -> None:
    db = postgres.new_database()
    pki = _pki(tmp_path / "pki", ["127.0.0.1"])
    tls = ("--tls-cert", str(pki.cert), "--tls-key", str(pki.key))
    env = {"LAKESHORE_SECRET_KEY": SHARED_KEY}
    servers: list[TlsServer] = []
    daemons: list[NymphProc] = []
    try:
        a = _serve(tmp_path, *tls, ca=pki.ca, db=db, env=env, probe=False)
        servers.append(a)
        b = _serve(tmp_path, *tls, ca=pki.ca, db=db, env=env, probe=False)
        servers.append(b)
        on_a = Client(a.url, a.admin_token, namespace=NS, ca=str(pki.ca))
        on_b = Client(b.url, a.admin_token, namespace=NS, ca=str(pki.ca))
        on_a.create_namespace(NS)
        folders = []
        for k in range(DAEMONS):
            folder = tmp_path / f"host-{k}"
            folder.mkdir()
            token = on_a.create_token(NS, scope="bootstrap", provider=f"fo-{k}", host=f"host-{k}")
            (folder / "token").write_text(token + "\n")
            (folder / "token").chmod(0o600)
            folders.append(folder)
            argv = [
                *nymph_argv(), "--server", f"{a.url},{b.url}", "--ca", str(pki.ca),
                "--namespace", NS, "--token-file", str(folder / "token"),
                "--provider", f"fo-{k}", "--instance-id", f"i-{k}", "--workdir", str(folder),
                # a held poll cut by the kill is retried within U(0, 2 s), not the usual 10
                "--poll-wait", "20", "--max-backoff", "2",
            ]  # fmt: skip
            daemons.append(NymphProc(argv, folder / "nymph.log").start())

        def logs() -> str:
            return "\n".join(f"--- {d.log_path}\n{d.log()[-1500:]}" for d in daemons)

        def enrolled_and_polling_a() -> bool:
            workers = {w["providerName"] for w in on_a.workers()}
            return workers == {f"fo-{k}" for k in range(DAEMONS)} and all(
                (f / "daemon.pem").exists() for f in folders
            )

        assert wait_until(enrolled_and_polling_a, 90), logs()
        before = [(f / "daemon.pem").read_bytes() for f in folders]
        serials = [json.loads((f / "daemon.json").read_text())["serial"] for f in folders]
        assert len(_cert_rows(on_a)) == DAEMONS
        worker_ids = {w["providerName"]: w["workerId"] for w in on_a.workers()}
        for d in daemons:  # on A, their first server, since they started
            assert "trying the next control plane" not in d.log(), logs()
            assert d.alive(), logs()

        killed = time.time()
        assert a.proc is not None
        a.proc.kill()
        a.proc.wait()

        # work for every daemon, submitted through B only after A is gone
        items = [on_b.submit_work(f"fo-{k}", f"echo ran >> ran-{k}") for k in range(DAEMONS)]
        for k, item in enumerate(items):
            done = on_b.get_work(item["id"], wait=60)
            if done["state"] in ("queued", "running"):
                done = on_b.get_work(item["id"], wait=30)
            assert done["state"] == "succeeded", (done, logs())
            assert (folders[k] / f"ran-{k}").read_text() == "ran\n"  # exactly once
        moved = time.time() - killed

        for k, d in enumerate(daemons):
            log = d.log()
            assert f"trying the next control plane: {b.url}" in log, logs()
            assert log.count("got a client certificate") == 1, logs()
            assert "renewed the" not in log and "asking for a new one" not in log, logs()
            assert (folders[k] / "daemon.pem").read_bytes() == before[k]
            assert json.loads((folders[k] / "daemon.json").read_text())["serial"] == serials[k]
            assert d.alive(), logs()
        # no certificate was issued at B; the bootstrap tokens are spent
        assert sorted(r["label"] for r in _cert_rows(on_b)) == sorted(f"cert {s}" for s in serials)
        spent = Client(b.url, (folders[0] / "token").read_text().strip(), namespace=NS,
                       ca=str(pki.ca))  # fmt: skip
        with pytest.raises(ApiFailure) as refused:
            spent.request("POST", f"/api/namespaces/{NS}/daemon-certs", {"csr": "x"})
        assert refused.value.status == 401
        # the workers are the ones registered at A: carried on, not registered anew
        assert {w["providerName"]: w["workerId"] for w in on_b.workers()} == worker_ids
        print(f"every daemon worked at B {moved:.1f} s after A was killed")
    finally:
        for d in daemons:
            if d.alive():
                d.terminate()
        for s in servers:
            _stop(s)
