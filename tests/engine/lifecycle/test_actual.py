"""The actual status (5) derived from an observation and the host's daemon, and the
host probe's parser; and `status` telling a deliberate suspend from a dead daemon."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.engine.backends.base import InfraState
from dreamlake.engine.contract.result import Claim, LockInfo
from dreamlake.engine.daemon.suspend import HostDaemon, parse_probe
from dreamlake.engine.lifecycle.actual import actual_status, applied_stopped, power_stopped
from dreamlake.engine.world.derive import Observation, derive
from dreamlake.engine.world.record import ProviderRecord
from dreamlake.engine.world.vendors import get_template, supports_stateful_lifecycle


def obs(
    vendor: str,
    *,
    infra: InfraState | None = None,
    live: int = 0,
    gone: int = 0,
    target: str = "active",
    claims: bool = True,
) -> Observation:
    backend = "none" if vendor == "ssh" else "terraform"
    rec = ProviderRecord(
        name="lab", vendor=vendor, backend=backend, template_version=1, engine_version="0"
    )
    return Observation(
        name="lab",
        dir=Path("/p/.dream/providers/lab"),
        dream_dir=None,
        record=rec,
        template=get_template(vendor),
        infra=infra if backend != "none" else None,
        claims=Claim(live=live, gone=gone) if claims else None,
        target=target,
    )


def host(state: str, *, ok: bool = True) -> HostDaemon:
    return HostDaemon(state, "tmux", "/h/d", ok, "/h/d", ok)  # type: ignore[arg-type]


UP = InfraState(present=True, resources=1, outputs={"worker_host": "localhost"})


@pytest.mark.parametrize(
    ("o", "h", "expected"),
    [
        (obs("local"), None, "absent"),
        (obs("local", infra=InfraState(lock=LockInfo(state="held"))), None, "provisioning"),
        (obs("local", infra=InfraState(lock=LockInfo(state="stale"))), None, "failed"),
        (obs("local", infra=InfraState(present=True, partial=True)), None, "failed"),
        (obs("local", infra=UP, live=1), host("running"), "active"),
        (obs("local", infra=UP), host("running"), "provisioning"),  # joining
        (obs("local", infra=UP, claims=False), host("running"), "active"),  # no control plane
        (obs("local", infra=UP, gone=1), host("stopped"), "suspended"),
        (obs("local", infra=UP, gone=1), host("absent"), "absent"),
        (obs("ssh", gone=1), host("stopped"), "suspended"),
        (obs("ssh"), host("absent"), "absent"),
        (obs("ssh", live=1), host("running"), "active"),
        (obs("ec2", infra=UP), None, "active"),
        (
            obs("ec2", infra=InfraState(present=True, outputs={"power_state": ["stopped"]})),
            None,
            "suspended",
        ),
        (obs("ec2"), None, "absent"),
    ],
)
def test_actual_status(o: Observation, h: HostDaemon | None, expected: str) -> None:
    assert actual_status(o, h) == expected


def test_applied_stopped_from_the_state() -> None:
    def state(*rs: tuple[str, dict[str, str]]) -> dict[str, object]:
        return {
            "resources": [
                {"mode": "managed", "type": t, "instances": [{"attributes": a}]} for t, a in rs
            ]
        }

    assert applied_stopped(state(("aws_ec2_instance_state", {"state": "stopped"})))
    assert applied_stopped(state(("aws_ec2_instance_state", {"state": "running"}))) is False
    assert applied_stopped(state(("google_compute_instance", {"desired_status": "TERMINATED"})))
    assert applied_stopped(state(("aws_instance", {"instance_state": "stopped"}))) is None
    assert applied_stopped({}) is None
    up = obs("ec2", infra=UP)
    assert actual_status(up, None, True) == "suspended"
    assert actual_status(up, None, False) == "active"


def test_power_state() -> None:
    assert power_stopped({"power_state": {"value": ["stopped", "stopped"]}})
    assert power_stopped({"power_state": "stopped"})
    assert not power_stopped({"power_state": ["stopped", "running"]})
    assert not power_stopped({"power_state": []})
    assert not power_stopped({})


def test_status_tells_a_suspend_from_a_dead_daemon() -> None:
    dead = derive(obs("local", infra=UP, gone=1))
    assert dead.status == "unclaimed"
    assert dead.next_action is not None and "connect" in dead.next_action.command
    kept = derive(obs("local", infra=UP, gone=1, target="suspended"))
    assert kept.status == "suspended"
    assert kept.next_action is not None
    assert kept.next_action.command == "dreamlake provider resume -n lab"
    assert derive(obs("ssh", gone=1, target="suspended")).status == "suspended"
    # live workers win: the target is desired state, not a fact about the world
    assert derive(obs("local", infra=UP, live=1, target="suspended")).status == "connected"
    stopped = InfraState(present=True, outputs={"power_state": ["stopped"]})
    assert derive(obs("ec2", infra=stopped)).status == "suspended"


def test_capability_query() -> None:
    assert {v: supports_stateful_lifecycle(v) for v in ("local", "ssh", "ec2", "gce", "kube")} == {
        "local": True,
        "ssh": True,
        "ec2": True,
        "gce": True,
        "kube": False,
    }


def test_parse_probe() -> None:
    h = parse_probe(
        "dir=/h/.dreamlake/nymph/lab\ninstalled=yes\nworkdir=/srv/w\nworkdir_ok=yes\n"
        "pid=42\ntmux_dead=1\n"
    )
    assert (h.state, h.supervisor, h.pid, h.recoverable) == ("stopped", "tmux", 42, True)
    assert parse_probe("dir=/d\ninstalled=yes\nworkdir=/d\ntmux_dead=0\n").state == "running"
    gone = parse_probe("dir=/d\nworkdir=/d\n")
    assert (gone.state, gone.supervisor, gone.recoverable) == ("absent", None, False)
    unit = parse_probe("dir=/d\ninstalled=yes\nworkdir=/d\nworkdir_ok=yes\nsystemd_user=inactive\n")
    assert (unit.state, unit.supervisor) == ("stopped", "systemd-user")
    active = parse_probe("systemd_system=active\n")
    assert (active.state, active.supervisor) == ("running", "systemd-system")
