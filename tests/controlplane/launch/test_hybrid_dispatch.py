"""Hybrid dispatch on an SSH provider: the first item of a queue runs direct while a
daemon is installed behind it, the later ones go through the daemon once it claims
(a real ``lakeshore serve``, a real sshd and tmux, the real daemon); and when the
daemon cannot come up (a launcher TEST DOUBLE refusing daemon launches, in process)
the queue keeps working direct, one run per item, and says so."""

from __future__ import annotations

import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lakeshore_fixtures import ServerProc, free_port
from launch_harness import P, ok
from sshd import skip_reason, start_sshd


@pytest.fixture(scope="module")
def hybrid_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    """One real server for the two real-host tests (each with names, secrets and a
    queue of its own), its queue loop ticking every half second."""
    s = ServerProc(
        data_dir=tmp_path_factory.mktemp("lakeshore-hybrid"),
        port=free_port(),
        env={"LAKESHORE_QUEUE_TICK": "0.5"},
    )
    s.start()
    try:
        yield s
    finally:
        s.kill()


class HybridSshDouble:
    """A TEST DOUBLE of the SSH launcher: direct runs start and finish at once
    (``describe`` answers their outcome); daemon installs fail as a broken host's do."""

    def __init__(self) -> None:
        self.direct: list[str] = []
        self.daemon_tries = 0

    def launch(self, order: Any) -> dict[str, Any]:
        if order.dispatch == "daemon":
            self.daemon_tries += 1
            raise RuntimeError("the daemon exited right after it was started on box: no python3")
        iid = f"root@box:22/run-{len(self.direct)}"
        self.direct.append(order.run.get("command"))
        return {"instances": [{"id": iid, "state": "running", "index": 0}]}

    def describe(self, order: Any, ids: Any) -> dict[str, Any]:
        return {i: {"state": "succeeded", "exitCode": 0, "outputTail": f"ran {i}"} for i in ids}

    def terminate(self, order: Any, ids: Any) -> None:
        pass


def _key(name: str) -> str:
    """The key a launch gives the provider's daemon (a row with no identity)."""
    from dreamlake.engine.daemon.key import key_of

    return key_of(f"lakeshore:default/{name}")


def test_a_daemon_that_cannot_come_up_leaves_the_queue_working_direct(
    app_client: tuple[Any, Any],
) -> None:
    from dreamlake.controlplane.queues.loop import QueueLoop

    client, app = app_client
    app.state.queue_loop.stop()
    double = HybridSshDouble()
    app.state.launch_backends = {"SSH": double}
    body = {"name": "box", "launcher": "SSH", "kwargs": {"hosts": ["box"]}, "dispatch": "hybrid"}
    assert ok(client.post(P + "/providers", json=body), 201)["dispatch"] == "hybrid"
    ok(client.post(P + "/queues", json={"name": "q", "provider": "box", "max": 2}), 201)
    items = [
        ok(
            client.post(P + "/providers/box/work", json={"command": f"echo {n}", "queue": "q"}), 201
        )["id"]
        for n in range(3)
    ]
    loop = QueueLoop(app, tick=0.1)
    for _ in range(4):
        loop.once()
    done = [ok(client.get(P + f"/work/{i}")) for i in items]
    assert [d["state"] for d in done] == ["succeeded"] * 3, done
    assert all(d["workerId"] is None for d in done)  # every one ran direct
    assert double.direct == ["echo 0", "echo 1", "echo 2"]
    assert double.daemon_tries == 1  # not retried every pass
    events = ok(client.get(P + "/queues/q/status"))["events"]
    actions = [e["action"] for e in events]
    assert actions[:2] == ["direct", "daemon-failed"], events
    failed = events[1]["detail"]
    assert "no python3" in failed and failed.endswith("working direct")
    assert any("working direct: the daemon did not come up" in e["detail"] for e in events)
    # hybrid is for SSH and SLURM only
    bad = {"name": "aws", "launcher": "EC2", "kwargs": {"region": "r"}, "dispatch": "hybrid"}
    r = client.post(P + "/providers", json=bad)
    assert r.status_code == 422 and "hybrid" in r.json()["detail"]


@pytest.mark.slow
@pytest.mark.needs_sshd
def test_first_item_direct_then_the_daemon_on_a_real_host(
    hybrid_server: ServerProc, tmp_path: Path
) -> None:
    why = skip_reason()
    if why:
        pytest.skip(why)
    srv = hybrid_server
    sshd = start_sshd(tmp_path / "sshd")
    name = f"hy-{secrets.token_hex(3)}"
    api = srv.admin
    p = "/api/namespaces/default"
    try:
        api.request(
            "POST",
            p + "/secrets",
            {"name": "hy-key", "kind": "ssh_key", "value": sshd.client_key.read_text()},
        )
        kwargs = {
            "hosts": ["127.0.0.1"],
            "user": "root",
            "port": sshd.port,
            "private_key": {"$secret": "hy-key"},
            "host_key": sshd.host_key,
        }
        api.request(
            "POST",
            p + "/providers",
            {"name": name, "launcher": "SSH", "kwargs": kwargs, "dispatch": "hybrid"},
        )
        api.request("POST", p + "/queues", {"name": "hy", "provider": name, "max": 1})
        items = [
            api.request(
                "POST", p + f"/providers/{name}/work", {"command": f"echo item-{n}", "queue": "hy"}
            )["id"]
            for n in range(3)
        ]
        deadline = time.monotonic() + 150
        done: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            done = [api.request("GET", p + f"/work/{i}") for i in items]
            if all(d["state"] in ("succeeded", "failed", "lost") for d in done):
                break
            time.sleep(0.5)
        events = api.request("GET", p + "/queues/hy/status")["events"]
        assert [d["state"] for d in done] == ["succeeded"] * 3, (done, events)
        assert [d["outputTail"].strip() for d in done] == ["item-0", "item-1", "item-2"]
        assert done[0]["workerId"] is None  # the first ran direct
        assert done[1]["workerId"] and done[2]["workerId"]  # the later ones: the daemon
        actions = [e["action"] for e in events]
        assert actions[0] == "direct" and "launch" in actions and "direct-done" in actions
    finally:
        subprocess.run(
            ["tmux", "kill-session", "-t", f"=nymph-{_key(name)}"],
            check=False,
            capture_output=True,
        )
        sshd.stop()


@pytest.mark.slow
def test_hybrid_on_a_real_slurm_cluster(
    slurm_cluster: Any, hybrid_server: ServerProc, tmp_path: Path
) -> None:
    """The same on SLURM: the first item an ``sbatch`` of its command, the daemon an
    ``sbatch`` job of its own that claims the later items."""
    srv = hybrid_server
    api = srv.admin
    p = "/api/namespaces/default"
    slurm_cluster.add_provider(api, p, "hpc-h", "hybrid")
    api.request("POST", p + "/queues", {"name": "hq", "provider": "hpc-h", "max": 1})
    items = [
        api.request(
            "POST", p + "/providers/hpc-h/work", {"command": f"echo slurm-{n}", "queue": "hq"}
        )["id"]
        for n in range(2)
    ]
    deadline = time.monotonic() + 400
    done: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        done = [api.request("GET", p + f"/work/{i}") for i in items]
        if all(d["state"] in ("succeeded", "failed", "lost") for d in done):
            break
        time.sleep(1)
    events = api.request("GET", p + "/queues/hq/status")["events"]
    try:
        assert [d["state"] for d in done] == ["succeeded"] * 2, (done, events)
        assert "slurm-0" in done[0]["outputTail"] and done[0]["workerId"] is None
        assert "slurm-1" in done[1]["outputTail"] and done[1]["workerId"]
        assert events[0]["action"] == "direct"
    finally:
        for inst in api.request("GET", p + "/instances")["instances"]:
            if inst["state"] != "orphan" and inst["provider"] == "hpc-h":
                api.request("DELETE", p + f"/instances/{inst['id']}", timeout=120)
