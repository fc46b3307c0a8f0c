"""SSH through the server, for real: a queue on a pool of SSH hosts grows a worker
when work arrives (the server opens the session with the key from a secret and
installs and starts the daemon with the engine's own installer and supervisor code),
the real daemon runs the work, and once idle past ``idle-seconds`` the loop
terminates it (the daemon stopped, its token revoked). A real ``lakeshore serve``, a
real sshd and tmux; the CLI reads the outcome."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from lakeshore_fixtures import clean_env, lakeshore_argv
from sshd import skip_reason, start_sshd

pytestmark = [pytest.mark.slow, pytest.mark.needs_sshd]


def _refused(url: str, token: str) -> bool:
    from dreamlake.controlplane.client import ApiFailure, Client

    try:
        Client(url, token).whoami()
    except ApiFailure as exc:
        return exc.status == 401
    return False


def _wait(predicate: Any, timeout: float, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def test_queue_grows_and_reaps_a_worker_on_an_ssh_pool(start_server: Any, tmp_path: Path) -> None:
    why = skip_reason()
    if why:
        pytest.skip(why)
    from dreamlake.controlplane.client import Client

    srv = start_server()
    sshd = start_sshd(tmp_path / "sshd")
    from dreamlake.engine.daemon.key import key_of

    name = f"pool-{secrets.token_hex(3)}"
    key = key_of(f"lakeshore:default/{name}")  # the daemon's folder and tmux session nymph-<key>
    api = srv.admin
    p = "/api/namespaces/default"
    try:
        api.request(
            "POST",
            p + "/secrets",
            {"name": "pool-key", "kind": "ssh_key", "value": sshd.client_key.read_text()},
        )
        kwargs = {
            "hosts": ["127.0.0.1"],
            "user": "root",
            "port": sshd.port,
            "private_key": {"$secret": "pool-key"},
            "host_key": sshd.host_key,
        }
        body = {"name": name, "launcher": "SSH", "kwargs": kwargs, "dispatch": "daemon"}
        api.request("POST", p + "/providers", body)
        cli = [
            *lakeshore_argv(),
            "queues",
            "add",
            "pool",
            "--provider",
            name,
            "--max",
            "1",
            "--idle-seconds",
            "3",
            "--server",
            srv.url,
            "--token-file",
            str(srv.data_dir / "admin.token"),
        ]
        added = subprocess.run(cli, capture_output=True, text=True, env=clean_env(), timeout=60)
        assert added.returncode == 0, added.stderr
        assert "min 0 max 1" in added.stdout

        work = api.request(
            "POST",
            p + f"/providers/{name}/work",
            {"command": "echo from-the-pool", "queue": "pool"},
        )

        def finished() -> dict[str, Any] | None:
            item = api.request("GET", p + f"/work/{work['id']}", query={"wait": 5}, timeout=15)
            return item if item["state"] in ("succeeded", "failed", "lost") else None

        item = _wait(finished, 90, interval=0.1)
        status = api.request("GET", p + "/queues/pool/status")
        log = sshd.home / ".dreamlake" / "nymph" / key / "nymph.log"
        assert item and item["state"] == "succeeded", (
            status["events"],
            api.request("GET", p + "/workers"),
            log.read_text()[-1500:] if log.exists() else "no daemon log",
        )
        assert "from-the-pool" in item["outputTail"]
        # the decision is recorded once the launch call returns (the daemon may be
        # done with the work by then)
        launched = _wait(lambda: api.request("GET", p + "/queues/pool/status")["events"], 30)
        assert [e["action"] for e in launched][:1] == ["launch"]
        (inst,) = api.request("GET", p + "/instances", query={"all": "true"})["instances"]
        assert inst["id"] == f"root@127.0.0.1:{sshd.port}" and inst["launcher"] == "SSH"
        token_file = sshd.home / ".dreamlake" / "nymph" / key / "token"
        token = token_file.read_text().strip()
        assert Client(srv.url, token).whoami()

        # idle past 3 s with min 0: the loop terminates the worker
        def reaped() -> bool:
            st = api.request("GET", p + "/queues/pool/status")
            return any(e["action"] == "terminate" for e in st["events"])

        assert _wait(reaped, 60), api.request("GET", p + "/queues/pool/status")
        shown = subprocess.run(
            [*lakeshore_argv(), "queues", "status", "pool", "--json", *cli[-4:]],
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        decisions = [e["action"] for e in json.loads(shown.stdout)["events"]]
        assert decisions[0] == "launch" and "terminate" in decisions
        assert json.loads(shown.stdout)["instances"] == []
        alive = subprocess.run(["tmux", "has-session", "-t", f"=nymph-{key}"], check=False)
        assert alive.returncode != 0
        # revoked: refused once the server's token cache (a few seconds) lets go
        assert _wait(lambda: _refused(srv.url, token), 15)
    finally:
        subprocess.run(
            ["tmux", "kill-session", "-t", f"=nymph-{key}"], check=False, capture_output=True
        )
        sshd.stop()
