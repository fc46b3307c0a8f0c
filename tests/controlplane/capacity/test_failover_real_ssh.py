"""Failover for real: a control plane serving HTTP on 127.0.0.1 (the real app under
uvicorn, in a thread, so its EC2 launcher can be a TEST DOUBLE that answers every
launch as EC2 does when it has no capacity — no cloud runs here), a queue over EC2 and
two SSH providers on a real sshd, the cheapest (EC2) refusing. The loop puts EC2 in
back-off and launches on the next provider in the same pass (within 5 s of the
refusal); the real daemon it installs over SSH runs every item once; nothing is lost.
"""

from __future__ import annotations

import secrets
import subprocess
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from capacity_doubles import EC2_NO_CAPACITY, RefusingCloudDouble
from sshd import skip_reason, start_sshd

pytestmark = [pytest.mark.slow, pytest.mark.needs_sshd]

P = "/api/namespaces/default"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_queue_fails_over_from_refusing_ec2_to_a_real_ssh_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    why = skip_reason()
    if why:
        pytest.skip(why)
    import uvicorn
    from dreamlake.controlplane.client import Client
    from dreamlake.controlplane.server.app import create_app
    from dreamlake.controlplane.server.settings import Settings

    monkeypatch.delenv("LAKESHORE_SECRET_KEY", raising=False)
    monkeypatch.delenv("LAKESHORE_PUBLIC_URL", raising=False)
    monkeypatch.setenv("LAKESHORE_QUEUE_TICK", "0.5")
    app = create_app(Settings(data_dir=tmp_path / "data", live_seconds=5.0))
    double = RefusingCloudDouble(refuse={"aws": EC2_NO_CAPACITY})
    app.state.launch_backends = {"EC2": double}
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", log_config=None)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    sshd = start_sshd(tmp_path / "sshd")
    suffix = secrets.token_hex(3)
    names = [f"box-a-{suffix}", f"box-b-{suffix}"]  # tmux sessions are nymph-<name>
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.1)
        token = (tmp_path / "data" / "admin.token").read_text().strip()
        api = Client(f"http://127.0.0.1:{port}", token, timeout=120)
        api.request(
            "POST",
            P + "/secrets",
            {"name": "box-key", "kind": "ssh_key", "value": sshd.client_key.read_text()},
        )
        aws = {"region": "us-east-1", "capacity": {"offers": [{"name": "g5.xlarge"}]}}
        api.request("POST", P + "/providers", {"name": "aws", "launcher": "EC2", "kwargs": aws})
        for name in names:
            kwargs = {
                "hosts": ["127.0.0.1"],
                "user": "root",
                "port": sshd.port,
                "private_key": {"$secret": "box-key"},
                "known_hosts": str(tmp_path / "known_hosts"),
            }
            api.request(
                "POST",
                P + "/providers",
                {"name": name, "launcher": "SSH", "kwargs": kwargs, "dispatch": "daemon"},
            )
        prices = {
            "aws": {"g5.xlarge": 0.1},
            names[0]: {"127.0.0.1": 0.5},
            names[1]: {"127.0.0.1": 0.6},
        }
        api.request("PUT", P + "/capacity/prices", {"prices": prices})
        api.request(
            "POST",
            P + "/queues",
            {
                "name": "mixed",
                "providers": ["aws", *names],
                "strategy": "cheapest",
                "max": 2,
                "idleSeconds": 600,
            },
        )
        items = [
            api.request(
                "POST", P + "/providers/aws/work", {"command": f"echo item-{n}", "queue": "mixed"}
            )["id"]
            for n in range(4)
        ]

        def finished() -> list[dict[str, Any]] | None:
            out = [api.request("GET", P + f"/work/{i}") for i in items]
            return out if all(o["state"] in ("succeeded", "failed", "lost") for o in out) else None

        deadline = time.monotonic() + 180
        done = None
        while done is None and time.monotonic() < deadline:
            done = finished()
            time.sleep(0.5)
        status = api.request("GET", P + "/queues/mixed/status")
        assert done is not None, status["events"]
        assert [d["state"] for d in done] == ["succeeded"] * 4, (done, status["events"])
        assert sorted(d["outputTail"].strip() for d in done) == [f"item-{n}" for n in range(4)]
        assert {d["providerName"] for d in done} <= set(names)  # none on the refusing EC2
        assert len({d["id"] for d in done}) == 4 and all(d["workerId"] for d in done)

        events = status["events"]
        refused = next(e for e in events if e["action"] == "refused")
        assert refused["detail"].startswith("aws refused the launch (InsufficientInstanceCapacity)")
        assert double.calls.count("aws") == 1  # in back-off afterwards
        launches = api.request("GET", P + "/instances", query={"all": "true", "live": "false"})
        first = min(_iso(i["createdAt"]) for i in launches["instances"])
        # the instance row is written when the SSH install returns; the launch began in
        # the same pass as the refusal (the install itself is the only wait)
        launch_event = next(e for e in events if e["action"] == "launch")
        assert names[0] in launch_event["detail"]
        assert (first - _iso(refused["at"])).total_seconds() < 120
        listing = {p["name"]: p for p in api.request("GET", P + "/capacity")["providers"]}
        assert listing["aws"]["backoff"]["reason"] == "InsufficientInstanceCapacity"
        assert listing[names[0]]["workers"]["live"] >= 1

        requests_rows = _launch_requests(app)
        started = min(at for p, at in requests_rows if p in names)
        gap = (started - _iso(refused["at"])).total_seconds()
        assert gap < 5, f"the next provider's launch began {gap:.1f}s after the refusal"
    finally:
        for name in names:
            subprocess.run(
                ["tmux", "kill-session", "-t", f"=nymph-{name}"], check=False, capture_output=True
            )
        server.should_exit = True
        thread.join(timeout=30)
        sshd.stop()
        app.state.engine.dispose()


def _launch_requests(app: Any) -> list[tuple[str, datetime]]:
    from dreamlake.controlplane.launch.models import LaunchRequest
    from sqlalchemy import select

    with app.state.sessionmaker() as s:
        return [(r.provider_name, r.created_at) for r in s.scalars(select(LaunchRequest))]
