"""The deriver and the record of what verb the engine started (``intent.json``).

One answer per state: ``applying`` whenever a verb the engine started is in flight
(its process runs: the lock ``held``) or was interrupted (its process is gone:
``stale``), and whenever terraform's state lock is there without a record (a run
by hand: re-run the apply). The next action re-runs the verb that was started,
gated as it was. A starting daemon is ``connecting`` (look again), and an adopted
provider that was destroyed, or whose kept state was found gone, never reads
``suspended`` or ``unclaimed`` from the workers it once had."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from dreamlake.engine.backends.base import InfraState
from dreamlake.engine.contract.result import Claim, LockInfo
from dreamlake.engine.lifecycle.actual import actual_status
from dreamlake.engine.lifecycle.gating import DEFAULT
from dreamlake.engine.world.derive import Observation, derive
from dreamlake.engine.world.intent import (
    START_WINDOW,
    Intent,
    hold_ahead,
    read_intent,
    recording,
    release_ahead,
    write_intent,
)
from dreamlake.engine.world.record import ProviderRecord
from dreamlake.engine.world.vendors import get_template

DIR = Path("/p/.dream/providers/lab")
UP = InfraState(present=True, resources=1, outputs={"worker_host": "h"})
GONE = Claim(live=0, gone=2)


def it(verb: str, *, alive: bool = False, outcome: str | None = None, **kw: object) -> Intent:
    return Intent(
        verb=verb,
        pid=1,
        host=socket.gethostname(),
        started=1000.0,
        started_at="2026-12-01T00:00:00Z",
        outcome=outcome,
        alive=alive,
        path=str(DIR / "intent.json"),
        **kw,  # type: ignore[arg-type]
    )


def obs(vendor: str = "local", gating: frozenset[str] = DEFAULT, **kw: object) -> Observation:
    backend = "none" if vendor == "ssh" else "terraform"
    rec = ProviderRecord(
        name="lab", vendor=vendor, backend=backend, template_version=1, engine_version="0"
    )  # type: ignore[arg-type]
    return Observation(
        name="lab",
        dir=DIR,
        dream_dir=None,
        record=rec,
        template=get_template(vendor),
        gating=gating,
        **kw,  # type: ignore[arg-type]
    )


P = "dreamlake provider"


@pytest.mark.parametrize(
    ("world", "state", "command", "approval"),
    [
        (obs(infra=UP, intent=it("destroy")), "stale", f"{P} destroy -n lab --yes", True),
        (
            obs(infra=UP, intent=it("destroy", alive=True)),
            "held",
            f"{P} destroy -n lab --yes",
            True,
        ),
        (obs(infra=UP, intent=it("apply")), "stale", f"{P} apply -n lab --yes", True),
        (obs(infra=UP, intent=it("suspend")), "stale", f"{P} suspend -n lab", None),
        (obs(infra=UP, intent=it("resume")), "stale", f"{P} resume -n lab", None),
        (
            obs(infra=UP, intent=it("resume"), gating=frozenset({"resume"})),
            "stale",
            f"{P} resume -n lab --yes",
            True,
        ),
        (obs("kube", infra=UP, intent=it("suspend")), "stale", f"{P} suspend -n lab --yes", True),
        (
            obs(infra=UP, intent=it("reconcile", step="provision", yes=True)),
            "stale",
            f"{P} reconcile -n lab --yes",
            True,
        ),
        (obs("ssh", claims=GONE, intent=it("destroy")), "stale", f"{P} destroy -n lab --yes", True),
        # a terraform lock and no record: a run by hand; its re-run is the apply
        (
            obs(infra=InfraState(lock=LockInfo(state="stale", path="l"))),
            "stale",
            f"{P} apply -n lab --yes",
            True,
        ),
        (
            obs(infra=InfraState(lock=LockInfo(state="held", path="l")), gating=frozenset()),
            "held",
            f"{P} apply -n lab --yes",
            None,
        ),
        # a record and a lock: the record names the verb, the lock where it is
        (
            obs(
                infra=UP.__class__(present=True, lock=LockInfo(state="stale", path="l")),
                intent=it("destroy"),
            ),
            "stale",
            f"{P} destroy -n lab --yes",
            True,
        ),
    ],
)
def test_applying_re_runs_the_verb_that_was_started(
    world: Observation, state: str, command: str, approval: bool | None
) -> None:
    d = derive(world)
    assert d.status == "applying"
    assert d.lock is not None and d.lock.state == state
    assert d.next_action is not None and d.next_action.command == command
    assert d.next_action.approval is approval
    if world.intent is not None:
        assert d.lock.operation == world.intent.verb


def test_a_stale_lock_is_never_in_flight() -> None:
    d = derive(obs(infra=UP, intent=it("destroy")))
    assert d.lock is not None and d.lock.state == "stale"
    assert "interrupted" in (d.lock.detail or "") and "in flight" not in (d.lock.detail or "")


def test_a_connect_in_flight_or_just_started_is_connecting_and_says_look_again() -> None:
    starting = [
        obs(infra=UP, claims=Claim(live=0, gone=0), intent=it("connect", alive=True)),
        obs(
            infra=UP,
            claims=Claim(live=0, gone=0),
            intent=it("connect", outcome="connecting"),
            daemon="running",
            now=1000.0 + START_WINDOW / 2,
        ),
        obs(
            "ssh",
            claims=Claim(live=0, gone=1),
            intent=it("connect", outcome="connecting"),
            daemon="running",
            now=1001.0,
        ),
    ]
    for w in starting:
        d = derive(w)
        assert d.status == "connecting", w
        assert d.next_action is not None and d.next_action.command == f"{P} status -n lab"


@pytest.mark.parametrize(
    "world",
    [
        # the supervisor does not run it: it is not starting, restart it
        obs(infra=UP, claims=Claim(live=0, gone=0), intent=it("connect", outcome="connecting")),
        # past the start window: a daemon that never claimed is not starting
        obs(
            infra=UP,
            claims=Claim(live=0, gone=0),
            intent=it("connect", outcome="connecting"),
            daemon="running",
            now=1000.0 + START_WINDOW + 1,
        ),
        # an interrupted connect: connect again
        obs(infra=UP, claims=Claim(live=0, gone=0), intent=it("connect")),
    ],
)
def test_not_starting_is_unclaimed_with_connect(world: Observation) -> None:
    d = derive(world)
    assert d.status == "unclaimed"
    assert d.next_action is not None and d.next_action.command == f"{P} connect -n lab"


def test_a_live_claim_wins_over_a_starting_record() -> None:
    w = obs(
        infra=UP,
        claims=Claim(live=1, gone=0, instances=["i"]),
        intent=it("connect", outcome="connecting"),
        daemon="running",
        now=1001.0,
    )
    assert derive(w).status == "connected"


@pytest.mark.parametrize("target", ["active", "suspended"])
def test_an_adopted_provider_destroyed_reads_scaffolded(target: str) -> None:
    w = obs("ssh", claims=GONE, target=target, intent=it("destroy", outcome="destroyed"))
    d = derive(w)
    assert d.status == "scaffolded"
    assert d.next_action is not None and d.next_action.command == f"{P} connect -n lab"
    # without the record its gone workers made it unclaimed, or suspended
    before = derive(obs("ssh", claims=GONE, target=target))
    assert before.status == ("suspended" if target == "suspended" else "unclaimed")


def test_a_kept_state_found_gone_never_reads_suspended() -> None:
    for vendor, kw in (("ssh", {}), ("local", {"infra": UP})):
        w = obs(vendor, claims=GONE, target="suspended", intent=it("suspend", outcome="gone"), **kw)
        assert derive(w).status != "suspended"


def test_the_planner_calls_a_half_applied_provider_failed() -> None:
    half = obs("ec2", infra=InfraState(present=True, resources=1, failed_apply=("a.b",)))
    assert derive(half).status == "error"
    assert actual_status(half, None) == "failed"


def test_the_record_is_written_atomically_and_removed_on_completion(tmp_path: Path) -> None:
    with recording(tmp_path, "destroy", yes=True, step="deprovision"):
        seen = read_intent(tmp_path)
        assert seen is not None and seen.verb == "destroy" and seen.in_flight and seen.own
    assert read_intent(tmp_path) is None
    with pytest.raises(RuntimeError), recording(tmp_path, "apply"):
        raise RuntimeError("an ordinary error is an answer: the verb finished")
    assert read_intent(tmp_path) is None
    with pytest.raises(KeyboardInterrupt), recording(tmp_path, "apply"):
        raise KeyboardInterrupt
    left = read_intent(tmp_path)
    assert left is not None and left.verb == "apply" and left.interrupted
    assert [p.name for p in tmp_path.iterdir()] == ["intent.json"]  # no temp file left


def test_a_record_written_ahead_is_held_as_this_runs_own_and_taken_over(tmp_path: Path) -> None:
    write_intent(tmp_path, "apply", yes=True, step="provision")
    written = (tmp_path / "intent.json").read_text()
    hold_ahead(tmp_path, "apply", yes=True, step="provision")
    seen = read_intent(tmp_path)
    assert seen is not None and seen.own and seen.in_flight  # no other run in flight
    with recording(tmp_path, "apply", yes=True, step="provision"):
        assert (tmp_path / "intent.json").read_text() == written  # not written again
    assert read_intent(tmp_path) is None  # removed as its own record is
    release_ahead(tmp_path, keep=False)  # taken over: nothing left to let go of
    # Held and never taken over: removed as a finished verb's, or kept (interrupted).
    for keep in (False, True):
        write_intent(tmp_path, "apply", yes=True, step="provision")
        hold_ahead(tmp_path, "apply", yes=True, step="provision")
        release_ahead(tmp_path, keep=keep)
        left = read_intent(tmp_path)
        assert (left is not None and left.interrupted) if keep else left is None


def test_a_record_of_a_dead_or_reused_pid_is_interrupted(tmp_path: Path) -> None:
    write_intent(tmp_path, "destroy", pid=2**22 + 17)
    got = read_intent(tmp_path)
    assert got is not None and got.interrupted
    # a live process of another start time (a reused pid) is not the one that wrote it
    write_intent(tmp_path, "destroy", pid=os.getppid())
    raw = (tmp_path / "intent.json").read_text().replace('"procStart": ', '"procStart": "1", "x": ')
    (tmp_path / "intent.json").write_text(raw)
    got = read_intent(tmp_path)
    assert got is not None and got.interrupted


def test_a_record_nobody_can_read_is_no_record(tmp_path: Path) -> None:
    (tmp_path / "intent.json").write_text("{not json")
    assert read_intent(tmp_path) is None
