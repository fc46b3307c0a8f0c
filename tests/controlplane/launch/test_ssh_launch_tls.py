"""A launched SSH worker over TLS, end to end on real components: ``lakeshore serve``
on 127.0.0.1 with the operator's own certificate from a private CA (``--tls-cert``,
``--tls-key``, ``--tls-ca``), a real sshd host, the engine's installer and the real
daemon.

* the host gets the CA the operator named (``ca.crt``) and a bootstrap token, and
  no daemon-scope bearer token is in any file the launch wrote there;
* the daemon makes its key there (0600), spends the token on its certificate and
  works by it (its worker is tied to the instance's token);
* terminating the instance revokes that certificate at once.
"""

from __future__ import annotations

import json
import re
import sqlite3
import stat
import urllib.parse
from pathlib import Path

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from sshd import skip_reason, start_sshd
from test_ssh_launch_tracking import _kill_tmux, _provider
from test_tls_serving import _pki, _serve, _stop
from tracking_check import P, wait

pytestmark = [pytest.mark.slow, pytest.mark.needs_sshd]
TOKEN = re.compile(rb"lks_[A-Za-z0-9_\-]+")


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]


def test_a_launched_ssh_worker_verifies_and_authenticates_over_tls(tmp_path: Path) -> None:
    why = skip_reason()
    if why:
        pytest.skip(why)
    from dreamlake.controlplane.server.access.tokens import hash_token

    pki = _pki(tmp_path / "pki", ["localhost", "127.0.0.1"])
    server = _serve(
        tmp_path, "--tls-cert", str(pki.cert), "--tls-key", str(pki.key),
        "--tls-ca", str(pki.ca), "--live-seconds", "2",
        ca=pki.ca, probe=False, env={"LAKESHORE_QUEUE_TICK": "0.5"},
    )  # fmt: skip
    base = tmp_path / "host"
    (base / "tmux").mkdir(parents=True)
    host = start_sshd(base, env={"TMUX_TMPDIR": str(base / "tmux")})
    db = sqlite3.connect(server.data_dir / "lakeshore.db")
    try:
        assert "launched daemons verify this server with" in server.output()
        api = Client(server.url, server.admin_token, ca=str(pki.ca), timeout=120)
        prov = _provider(api, [host], tmp_path, "daemon")
        out = api.request("POST", P + "/launch", {"provider": prov, "clientToken": "tls-1"})
        (inst,) = out["instances"]
        label = inst["id"]

        def live() -> bool:
            return any(w["instanceId"] == label and w["state"] == "active"
                       for w in api.request("GET", P + "/workers", query={"provider": prov}))  # fmt: skip

        assert wait(live, 90), server.output()[-3000:]
        folder = Path(inst["details"]["dir"])
        assert (folder / "ca.crt").read_bytes() == pki.ca.read_bytes()
        assert "--ca" in (folder / "run.sh").read_text()
        pem = folder / "daemon.pem"
        assert stat.S_IMODE(pem.stat().st_mode) == 0o600
        identity = json.loads((folder / "daemon.json").read_text())["identity"]
        assert identity == f"lakeshore://default/{prov}/{urllib.parse.quote(label, safe='')}"

        # every token in the files the launch wrote on the host: the bootstrap token, spent
        found = {m for p in _files(Path(host.home)) for m in TOKEN.findall(p.read_bytes())}
        assert found, "no token on the host"
        for token in found:
            rows = db.execute(
                "SELECT scope, revoked_at, expires_at, label FROM tokens WHERE token_hash = ?",
                (hash_token(token.decode()),),
            ).fetchall()
            assert rows, f"a token on the host the server never minted: {token[:8]!r}"
            ((scope, revoked, expires, label_),) = rows
            assert scope == "bootstrap" and revoked and expires, rows
            assert label_.startswith(f"instance {prov} "), rows
        (boot_id,) = db.execute(
            "SELECT token_id FROM instances WHERE instance_id = ?", (label,)
        ).fetchone()
        # the worker is tied to the instance's token, though it registered by certificate
        (worker_token,) = db.execute(
            "SELECT token_id FROM workers WHERE instance_id = ?", (label,)
        ).fetchone()
        assert worker_token == boot_id

        # it works by its certificate
        item = api.request("POST", P + f"/providers/{prov}/work", {"command": "echo over-tls"})
        done = wait(lambda: (g := api.request("GET", P + f"/work/{item['id']}"))["state"]
                    in ("succeeded", "failed", "lost") and g, 90)  # fmt: skip
        log = (folder / "nymph.log").read_text(errors="replace")
        assert done and done["state"] == "succeeded", (done, log[-2000:])
        assert "got a client certificate" in log
        daemon = Client(server.url, ca=str(pki.ca), cert=str(pem))
        who = daemon.whoami()
        assert (who["scope"], who["provider"]) == ("daemon", prov)

        # terminated: the certificate is refused at once
        api.request("DELETE", P + f"/instances/{label}")
        with pytest.raises(ApiFailure) as refused:
            daemon.whoami()
        assert refused.value.status == 401
        live_certs = db.execute(
            "SELECT count(*) FROM tokens WHERE root_token_id = ? AND revoked_at IS NULL",
            (boot_id,),
        ).fetchone()
        assert live_certs == (0,)
    finally:
        db.close()
        _kill_tmux(host)
        host.stop()
        _stop(server)


def test_a_retried_ssh_launch_leaves_its_enrolled_daemon_as_it_is(tmp_path: Path) -> None:
    """A launch that failed half-way (its second host unreachable) is retried with
    the same client token: the daemon it already started on the first host spent its
    bootstrap token on a certificate, so the retry must neither reinstall it (which
    drops the certificate) nor restart it; it works on by the same certificate."""
    why = skip_reason()
    if why:
        pytest.skip(why)
    pki = _pki(tmp_path / "pki", ["localhost", "127.0.0.1"])
    server = _serve(
        tmp_path, "--tls-cert", str(pki.cert), "--tls-key", str(pki.key),
        "--tls-ca", str(pki.ca), "--live-seconds", "2", ca=pki.ca, probe=False,
    )  # fmt: skip
    hosts = []
    for name in ("a", "b"):
        base = tmp_path / name
        (base / "tmux").mkdir(parents=True)
        hosts.append(start_sshd(base, env={"TMUX_TMPDIR": str(base / "tmux")}))
    a, b = hosts
    try:
        api = Client(server.url, server.admin_token, ca=str(pki.ca), timeout=120)
        prov = _provider(api, hosts, tmp_path, "daemon")
        b.stop()  # the second host cannot be reached
        body = {"provider": prov, "clientToken": "half-1", "count": 2}
        with pytest.raises(ApiFailure) as failed:
            api.request("POST", P + "/launch", body)
        assert failed.value.status == 502, failed.value.detail
        label = f"root@127.0.0.1:{a.port}"

        def live() -> bool:
            return any(w["instanceId"] == label and w["state"] == "active"
                       for w in api.request("GET", P + "/workers", query={"provider": prov}))  # fmt: skip

        assert wait(live, 90), server.output()[-3000:]
        (folder,) = [p.parent for p in Path(a.home).rglob("daemon.json")]
        first = json.loads((folder / "daemon.json").read_text())["serial"]

        with pytest.raises(ApiFailure) as again:  # the same request, the second host still down
            api.request("POST", P + "/launch", body)
        assert again.value.status == 502, again.value.detail
        assert json.loads((folder / "daemon.json").read_text())["serial"] == first
        assert (folder / "daemon.pem").is_file()
        item = api.request("POST", P + f"/providers/{prov}/work", {"command": "echo still-here"})
        done = wait(lambda: (g := api.request("GET", P + f"/work/{item['id']}"))["state"]
                    in ("succeeded", "failed", "lost") and g, 90)  # fmt: skip
        log = (folder / "nymph.log").read_text(errors="replace")
        assert done and done["state"] == "succeeded", (done, log[-2000:])
        assert "refused this daemon's certificate" not in log
    finally:
        for h in hosts:
            _kill_tmux(h)
            h.stop()
        _stop(server)
