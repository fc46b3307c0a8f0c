"""Failover for real: a control plane serving HTTP on 127.0.0.1 (the real app under
uvicorn, in a thread, so its EC2 launcher can be a TEST DOUBLE that answers every
launch as EC2 does when it has no capacity — no cloud runs here), a queue over EC2 and
two SSH providers on a real sshd — and, in the later tests, a SLURM provider on the
real single-node SLURM cluster as well — the cheapest (EC2) refusing. The loop puts
EC2 in back-off and launches on the next provider in the same pass (within 5 s of the
refusal); the real daemons it starts (over SSH, or in an sbatch job) run every item
once; nothing is lost. A drained SLURM partition, refused by the real sbatch, is a
capacity refusal too: the work goes on to SSH.
"""

from __future__ import annotations

import contextlib
import secrets
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from capacity_doubles import EC2_NO_CAPACITY, RefusingCloudDouble
from sshd import SSHServer, skip_reason, start_sshd

pytestmark = [pytest.mark.slow, pytest.mark.needs_sshd]

P = "/api/namespaces/default"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@contextlib.contextmanager
def _control_plane(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    double: RefusingCloudDouble,
    stop_daemons: Callable[[], None],
) -> Iterator[tuple[Any, Any]]:
    """The real app on 127.0.0.1 with ``double`` as its EC2 launcher: (app, admin client).
    ``stop_daemons`` runs before the server stops: a daemon's open poll would hold up
    its graceful shutdown."""
    import uvicorn
    from dreamlake.controlplane.client import Client
    from dreamlake.controlplane.server.app import create_app
    from dreamlake.controlplane.server.settings import Settings

    monkeypatch.delenv("LAKESHORE_SECRET_KEY", raising=False)
    monkeypatch.delenv("LAKESHORE_PUBLIC_URL", raising=False)
    monkeypatch.setenv("LAKESHORE_QUEUE_TICK", "0.5")
    app = create_app(Settings(data_dir=tmp_path / "data", live_seconds=5.0))
    app.state.launch_backends = {"EC2": double}
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", log_config=None)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.1)
        token = (tmp_path / "data" / "admin.token").read_text().strip()
        yield app, Client(f"http://127.0.0.1:{port}", token, timeout=120)
    finally:
        stop_daemons()
        server.should_exit = True
        thread.join(timeout=30)
        app.state.engine.dispose()


def _add_aws(api: Any) -> None:
    aws = {"region": "us-east-1", "capacity": {"offers": [{"name": "g5.xlarge"}]}}
    api.request("POST", P + "/providers", {"name": "aws", "launcher": "EC2", "kwargs": aws})


def _add_ssh_boxes(api: Any, sshd: SSHServer, tmp_path: Path, names: list[str]) -> None:
    api.request(
        "POST",
        P + "/secrets",
        {"name": "box-key", "kind": "ssh_key", "value": sshd.client_key.read_text()},
    )
    for name in names:
        kwargs = {
            "hosts": ["127.0.0.1"],
            "user": "root",
            "port": sshd.port,
            "private_key": {"$secret": "box-key"},
            "host_key": sshd.host_key,
        }
        api.request(
            "POST",
            P + "/providers",
            {"name": name, "launcher": "SSH", "kwargs": kwargs, "dispatch": "daemon"},
        )


def _add_slurm(api: Any, cluster: Any, tmp_path: Path, name: str) -> None:
    """A SLURM provider (daemon dispatch, one job at most) on the session's cluster."""
    login = cluster.login
    api.request(
        "POST",
        P + "/secrets",
        {"name": f"{name}-key", "kind": "ssh_key", "value": login.client_key.read_text()},
    )
    kwargs = {
        "host": "127.0.0.1",
        "user": "root",
        "port": login.port,
        "partition": "debug",
        "private_key": {"$secret": f"{name}-key"},
        "host_key": login.host_key,
        "capacity": {"limit": 1},  # one daemon job: the node has few CPUs
    }
    api.request(
        "POST",
        P + "/providers",
        {"name": name, "launcher": "SLURM", "kwargs": kwargs, "dispatch": "daemon"},
    )


def _mixed_queue(
    api: Any,
    prices: dict[str, dict[str, float]],
    providers: list[str],
    most: int,
    commands: list[str],
) -> list[str]:
    """Prices, a ``cheapest`` queue ``mixed`` over ``providers`` (at most ``most``
    workers), and one work item per command in it: the items' ids."""
    api.request("PUT", P + "/capacity/prices", {"prices": prices})
    api.request(
        "POST",
        P + "/queues",
        {
            "name": "mixed",
            "providers": providers,
            "strategy": "cheapest",
            "max": most,
            "idleSeconds": 600,
        },
    )
    return [
        api.request("POST", P + "/providers/aws/work", {"command": c, "queue": "mixed"})["id"]
        for c in commands
    ]


def _drain(api: Any, items: list[str], timeout: float) -> list[dict[str, Any]] | None:
    """Every item once it has ended (None if some had not within ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = [api.request("GET", P + f"/work/{i}") for i in items]
        if all(o["state"] in ("succeeded", "failed", "lost") for o in out):
            return out
        time.sleep(0.5)
    return None


def _backoffs_while_held(api: Any, providers: list[str], timeout: float = 60) -> dict[str, Any]:
    """The capacity listing's back-off of each of ``providers``, read as soon as the
    queue's events show its refusal: a back-off lasts 15 s at first, less than the
    SSH installs that drain the queue take, so after the drain it has ended."""
    deadline = time.monotonic() + timeout
    while True:
        events = api.request("GET", P + "/queues/mixed/status")["events"]
        refused = {
            p: e
            for e in events
            for p in providers
            if e["action"] == "refused" and e["detail"].startswith(f"{p} refused")
        }
        if len(refused) == len(providers):
            break
        assert time.monotonic() < deadline, events
        time.sleep(0.2)
    listing = {p["name"]: p for p in api.request("GET", P + "/capacity")["providers"]}
    out = {p: listing[p]["backoff"] for p in providers}
    for p, b in out.items():  # the listing says until when, as the event did
        assert b is not None, (p, refused)
        assert f"back-off until {b['until']}" in refused[p]["detail"], (b, refused)
    return out


def _kill_tmux(names: list[str]) -> None:
    from dreamlake.engine.daemon.key import key_of

    for name in names:  # a launched daemon's tmux session is nymph-<key>
        key = key_of(f"lakeshore:default/{name}")
        subprocess.run(
            ["tmux", "kill-session", "-t", f"=nymph-{key}"], check=False, capture_output=True
        )


def test_queue_fails_over_from_refusing_ec2_to_a_real_ssh_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    why = skip_reason()
    if why:
        pytest.skip(why)
    double = RefusingCloudDouble(refuse={"aws": EC2_NO_CAPACITY})
    sshd = start_sshd(tmp_path / "sshd")
    suffix = secrets.token_hex(3)
    names = [f"box-a-{suffix}", f"box-b-{suffix}"]

    def stop() -> None:
        _kill_tmux(names)

    try:
        with _control_plane(tmp_path, monkeypatch, double, stop) as (app, api):
            _add_aws(api)
            _add_ssh_boxes(api, sshd, tmp_path, names)
            prices = {
                "aws": {"g5.xlarge": 0.1},
                names[0]: {"127.0.0.1": 0.5},
                names[1]: {"127.0.0.1": 0.6},
            }
            commands = [f"echo item-{n}" for n in range(4)]
            items = _mixed_queue(api, prices, ["aws", *names], 2, commands)
            held = _backoffs_while_held(api, ["aws"])
            done = _drain(api, items, 180)
            status = api.request("GET", P + "/queues/mixed/status")
            assert done is not None, status["events"]
            assert [d["state"] for d in done] == ["succeeded"] * 4, (done, status["events"])
            assert sorted(d["outputTail"].strip() for d in done) == [f"item-{n}" for n in range(4)]
            assert {d["providerName"] for d in done} <= set(names)  # none on the refusing EC2
            assert len({d["id"] for d in done}) == 4 and all(d["workerId"] for d in done)

            events = status["events"]
            refused = next(e for e in events if e["action"] == "refused")
            assert refused["detail"].startswith(
                "aws refused the launch (InsufficientInstanceCapacity)"
            )
            assert double.calls.count("aws") == 1  # in back-off afterwards
            launches = api.request("GET", P + "/instances", query={"all": "true", "live": "false"})
            first = min(_iso(i["createdAt"]) for i in launches["instances"])
            # the instance row is written when the SSH install returns; the launch began in
            # the same pass as the refusal (the install itself is the only wait)
            launch_event = next(e for e in events if e["action"] == "launch")
            assert names[0] in launch_event["detail"]
            assert (first - _iso(refused["at"])).total_seconds() < 120
            assert held["aws"]["reason"] == "InsufficientInstanceCapacity"
            listing = {p["name"]: p for p in api.request("GET", P + "/capacity")["providers"]}
            assert listing[names[0]]["workers"]["live"] >= 1

            started = min(at for p, at in _launch_requests(app) if p in names)
            gap = (started - _iso(refused["at"])).total_seconds()
            assert gap < 5, f"the next provider's launch began {gap:.1f}s after the refusal"
    finally:
        stop()
        sshd.stop()


def test_queue_over_ec2_slurm_and_two_ssh_hosts_fails_over_to_slurm(
    slurm_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EC2 (0.1/h) refuses; SLURM (0.3/h, one job at most) is next and takes the first
    launch in the same pass; the two SSH hosts (0.5, 0.6) take the rest. Every item
    runs once (each run appends a line to one file on this machine), none on EC2."""
    double = RefusingCloudDouble(refuse={"aws": EC2_NO_CAPACITY})
    sshd = start_sshd(tmp_path / "sshd")
    suffix = secrets.token_hex(3)
    hpc = f"hpc-{suffix}"
    names = [f"box-a-{suffix}", f"box-b-{suffix}"]
    ran = tmp_path / "ran.log"
    ran.touch(mode=0o666)

    def stop() -> None:
        _kill_tmux(names)
        _scancel(slurm_cluster, f"lakeshore-{hpc}-")

    try:
        with _control_plane(tmp_path, monkeypatch, double, stop) as (app, api):
            _add_aws(api)
            _add_slurm(api, slurm_cluster, tmp_path, hpc)
            _add_ssh_boxes(api, sshd, tmp_path, names)
            prices = {
                "aws": {"g5.xlarge": 0.1},
                hpc: {"debug": 0.3},
                names[0]: {"127.0.0.1": 0.5},
                names[1]: {"127.0.0.1": 0.6},
            }
            command = 'echo "item-{n} ${{SLURM_JOB_ID:-ssh}}" >> {ran}; echo item-{n}'
            commands = [command.format(n=n, ran=ran) for n in range(5)]
            items = _mixed_queue(api, prices, ["aws", hpc, *names], 3, commands)
            held = _backoffs_while_held(api, ["aws"])
            done = _drain(api, items, 120)
            status = api.request("GET", P + "/queues/mixed/status")
            events = status["events"]
            assert done is not None, (events, slurm_cluster.run("squeue", "-h", "-o", "%i %T %R"))
            assert [d["state"] for d in done] == ["succeeded"] * 5, (done, events)
            assert sorted(d["outputTail"].strip() for d in done) == [f"item-{n}" for n in range(5)]
            # each item ran exactly once: one line per run, whoever ran it
            lines = ran.read_text().splitlines()
            assert sorted(line.split()[0] for line in lines) == [f"item-{n}" for n in range(5)]
            on = {d["providerName"] for d in done}
            assert hpc in on and on <= {hpc, *names}, done  # none on the refusing EC2
            for d in done:  # an item SLURM ran ran inside its sbatch job
                line = next(x for x in lines if x.split()[0] == d["outputTail"].strip())
                assert line.split()[1].isdigit() == (d["providerName"] == hpc), (line, d)

            refused = next(e for e in events if e["action"] == "refused")
            assert refused["detail"].startswith(
                "aws refused the launch (InsufficientInstanceCapacity)"
            )
            assert double.calls.count("aws") == 1  # in back-off afterwards
            launch_events = [e for e in events if e["action"] == "launch"]
            assert hpc in launch_events[0]["detail"], launch_events  # the next cheapest
            assert held["aws"]["reason"] == "InsufficientInstanceCapacity"
            listing = {p["name"]: p for p in api.request("GET", P + "/capacity")["providers"]}
            assert listing[hpc]["workers"]["live"] == 1

            rows = _launch_requests(app)
            assert [p for p, _ in rows].count(hpc) == 1  # its limit of one job
            started = min(at for p, at in rows if p == hpc)
            gap = (started - _iso(refused["at"])).total_seconds()
            assert gap < 5, f"SLURM's launch began {gap:.1f}s after EC2's refusal"
    finally:
        stop()
        sshd.stop()


@pytest.mark.parametrize(
    ("how", "reason"),
    [("drained", "SLURM partition not available"), ("full", "SLURM partition full")],
)
def test_a_slurm_partition_that_cannot_start_the_job_refuses_and_the_work_goes_to_ssh(
    slurm_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, reason: str
) -> None:
    """EC2 (0.1/h) refuses and so does SLURM (0.3/h): its partition is drained (the
    real sbatch turns the job down), or full (a job holds the whole node, so SLURM
    would queue the job: ``sbatch --test-only`` says when it would start, past the
    queue's bound). Both go into back-off; the first SSH host takes the launch in the
    same pass, within 5 s of SLURM's refusal; every item runs once there or on the
    second SSH host, none on EC2 or SLURM, and no job of the queue is left in SLURM."""
    double = RefusingCloudDouble(refuse={"aws": EC2_NO_CAPACITY})
    sshd = start_sshd(tmp_path / "sshd")
    suffix = secrets.token_hex(3)
    hpc = f"hpc-{suffix}"
    names = [f"box-a-{suffix}", f"box-b-{suffix}"]
    ran = tmp_path / "ran.log"
    ran.touch(mode=0o666)

    def stop() -> None:
        _kill_tmux(names)
        _scancel(slurm_cluster, f"lakeshore-{hpc}-")

    filler = f"filler-{suffix}"
    if how == "drained":
        slurm_cluster.run("scontrol", "update", "PartitionName=debug", "State=DRAIN")
    else:
        slurm_cluster.run(
            "sbatch", "--exclusive", f"--job-name={filler}", "--output=/dev/null", "--wrap",
            "sleep 300",
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while "RUNNING" not in slurm_cluster.run("squeue", "-h", "-n", filler, "-o", "%T"):
            assert time.monotonic() < deadline, slurm_cluster.run("squeue")
            time.sleep(0.2)
    try:
        with _control_plane(tmp_path, monkeypatch, double, stop) as (app, api):
            _add_aws(api)
            _add_slurm(api, slurm_cluster, tmp_path, hpc)
            _add_ssh_boxes(api, sshd, tmp_path, names)
            prices = {
                "aws": {"g5.xlarge": 0.1},
                hpc: {"debug": 0.3},
                names[0]: {"127.0.0.1": 0.5},
                names[1]: {"127.0.0.1": 0.6},
            }
            command = "echo item-{n} >> {ran}; echo item-{n}"
            commands = [command.format(n=n, ran=ran) for n in range(3)]
            items = _mixed_queue(api, prices, ["aws", hpc, *names], 2, commands)
            held = _backoffs_while_held(api, ["aws", hpc])
            done = _drain(api, items, 120)
            events = api.request("GET", P + "/queues/mixed/status")["events"]
            assert done is not None, events
            assert [d["state"] for d in done] == ["succeeded"] * 3, (done, events)
            assert sorted(ran.read_text().split()) == [f"item-{n}" for n in range(3)]
            assert {d["providerName"] for d in done} <= set(names), done

            refusals = [e for e in events if e["action"] == "refused"]
            assert refusals[0]["detail"].startswith(
                "aws refused the launch (InsufficientInstanceCapacity)"
            ), refusals
            slurm = next(e for e in refusals if e["detail"].startswith(hpc))
            assert f"({reason})" in slurm["detail"], slurm
            launch_events = [e for e in events if e["action"] == "launch"]
            assert names[0] in launch_events[0]["detail"], launch_events
            assert held["aws"]["reason"] == "InsufficientInstanceCapacity"
            assert held[hpc]["reason"] == reason
            listing = {p["name"]: p for p in api.request("GET", P + "/capacity")["providers"]}
            assert listing[hpc]["workers"]["live"] == 0

            started = min(at for p, at in _launch_requests(app) if p == names[0])
            gap = (started - _iso(slurm["at"])).total_seconds()
            assert gap < 5, f"the SSH launch began {gap:.1f}s after SLURM's refusal"
            assert f"lakeshore-{hpc}-" not in slurm_cluster.run("squeue", "-h", "-o", "%j")
    finally:
        slurm_cluster.run("scontrol", "update", "PartitionName=debug", "State=UP")
        _scancel(slurm_cluster, filler)
        stop()
        sshd.stop()


def _scancel(cluster: Any, prefix: str) -> None:
    """End this test's jobs: the cluster is the session's, the next test needs its CPUs."""
    jobs = [
        line.split()[0]
        for line in cluster.run("squeue", "-h", "-o", "%i %j").splitlines()
        if len(line.split()) == 2 and line.split()[1].startswith(prefix)
    ]
    if jobs:
        cluster.run("scancel", *jobs)


def _launch_requests(app: Any) -> list[tuple[str, datetime]]:
    from dreamlake.controlplane.launch.models import LaunchRequest
    from sqlalchemy import select

    with app.state.sessionmaker() as s:
        return [(r.provider_name, r.created_at) for r in s.scalars(select(LaunchRequest))]
