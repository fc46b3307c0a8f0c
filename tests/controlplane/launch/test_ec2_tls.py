"""An EC2 worker with the control plane on TLS, against the AWS API on 127.0.0.1
(moto's server) and a real ``lakeshore serve`` with its built-in CA: the instance's user-data
carries the built-in CA's certificate and a one-use bootstrap token (no
daemon-scope token); run for real on this machine as the first boot, it fetches the
daemon bundle with that token, verifying the server with the CA (then the bundle by
its hash), and its daemon spends the token on its client certificate and works by
it. Terminating the instance revokes that certificate."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from dreamlake.controlplane.server.access.tokens import hash_token
from launch_harness import AMI, ec2
from test_ec2_queue_growth import _pids_in
from test_tls_serving import _serve, _stop
from tracking_check import P, wait

pytestmark = pytest.mark.slow


def test_an_ec2_worker_verifies_and_authenticates_over_tls(
    aws_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        "AWS_ENDPOINT_URL": aws_api,
        "AWS_ACCESS_KEY_ID": "server-chain",
        "AWS_SECRET_ACCESS_KEY": "server-chain",
        "LAKESHORE_QUEUE_TICK": "0.5",
        "LAKESHORE_LAUNCH_SERVER_CREDENTIALS": "1",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    # the built-in CA: an address off 127.0.0.1 (still this machine's loopback)
    server = _serve(tmp_path, "--live-seconds", "2", host="127.0.0.2", probe=False, env=env)
    ca = server.data_dir / "tls" / "ca.crt"
    host = tmp_path / "instance"
    host.mkdir()
    try:
        api = Client(server.url, server.admin_token, ca=str(ca), timeout=60)
        kwargs = {"region": "us-east-1", "image_id": AMI}
        api.request("POST", P + "/providers", {"name": "aws", "launcher": "EC2", "kwargs": kwargs})
        api.request("POST", P + "/queues", {"name": "gpu", "provider": "aws", "max": 1})
        item = api.request(
            "POST", P + "/providers/aws/work", {"command": "echo tls-boot", "queue": "gpu"}
        )

        def launched() -> list[str]:
            rows = api.request("GET", P + "/instances")["instances"]
            return [r["id"] for r in rows]

        ids = wait(launched, 60)
        assert ids, server.output()[-2000:]
        (iid,) = ids
        attr = ec2(aws_api).describe_instance_attribute(InstanceId=iid, Attribute="userData")
        script = base64.b64decode(attr["UserData"]["Value"]).decode()
        assert ca.read_text().strip() in script and "--ca ca.crt" in script
        assert len(script.encode()) < 16 * 1024
        token = script.split("<<'LAKESHORE_TOKEN'\n", 1)[1].split("\n", 1)[0]
        with sqlite3.connect(server.data_dir / "lakeshore.db") as db:
            rows = db.execute(
                "SELECT scope, provider_name, expires_at FROM tokens WHERE token_hash = ?",
                (hash_token(token),),
            ).fetchall()
        assert len(rows) == 1 and rows[0][:2] == ("bootstrap", "aws") and rows[0][2], rows
        boot_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("LAKESHORE_", "AWS_"))},
            "LAKESHORE_NYMPH_DIR": str(host),
            "LAKESHORE_INSTANCE_ID": iid,
            "LAKESHORE_NO_SYSTEMD": "1",
            "LAKESHORE_PER_BOOT_DIR": str(tmp_path / "per-boot"),
        }
        ran = subprocess.run(["sh", "-c", script], env=boot_env, capture_output=True,
                             text=True, timeout=600)  # fmt: skip
        assert ran.returncode == 0, ran.stderr[-2000:]

        def finished() -> dict[str, Any] | None:
            got = api.request("GET", P + f"/work/{item['id']}")
            return got if got["state"] in ("succeeded", "failed", "lost") else None

        done = wait(finished, 120)
        log = (
            (host / "nymph.log").read_text(errors="replace")
            if (host / "nymph.log").exists()
            else ""
        )
        assert done and done["state"] == "succeeded", (done, log[-2000:])
        assert "got a client certificate" in log
        with pytest.raises(ApiFailure) as spent:  # spent on the certificate
            Client(server.url, token, ca=str(ca)).whoami()
        assert spent.value.status == 401
        assert (host / "token").read_text().strip() == token  # the one token on the host
        daemon = Client(server.url, ca=str(ca), cert=str(host / "daemon.pem"))
        assert daemon.whoami()["provider"] == "aws"

        api.request("DELETE", P + f"/instances/{iid}")
        with pytest.raises(ApiFailure) as refused:
            daemon.whoami()
        assert refused.value.status == 401
    finally:
        for pid in _pids_in(host):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        _stop(server)
