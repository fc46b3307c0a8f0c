"""Every step that spends or destroys is flagged: a walk over every status the deriver
gives, for every shipped vendor and every gating set (the 16 subsets of the four
steps, the built-in default among them). A next action whose step is gated for the
provider carries ``approval: true``; one whose step is not gated (or that is no
step: plan, connect, status, create) never does.

The step of a next action is read back from its command, independently of the
code under test: apply → provision; destroy, delete → deprovision; suspend →
suspend (deprovision without the stateful lifecycle); resume → resume (provision
without it); reconcile → the step the interrupted run was performing."""

from __future__ import annotations

import itertools
import shlex
import socket
from pathlib import Path

import pytest
from dreamlake.engine.backends.base import InfraState
from dreamlake.engine.contract.result import Blocking, Claim, LockInfo, PlanCounts
from dreamlake.engine.lifecycle.gating import ACTIONS, DEFAULT
from dreamlake.engine.world.derive import Observation, derive
from dreamlake.engine.world.intent import Intent
from dreamlake.engine.world.record import ProviderRecord
from dreamlake.engine.world.vendors import get_template

VENDORS = ("ec2", "gce", "kube", "local", "ssh")
GATINGS = [frozenset(c) for n in range(5) for c in itertools.combinations(ACTIONS, n)]
assert DEFAULT in GATINGS and len(GATINGS) == 16

DIR = Path("/p/.dream/providers/lab")
UNSET = Blocking(key="region", reason="unset", file=str(DIR / "terraform/terraform.tfvars"))
UP = InfraState(present=True, resources=2, outputs={"worker_host": "h"})
PLANNED = InfraState(plan_fresh=True, plan=PlanCounts(add=2, change=0, destroy=0))
HOST = socket.gethostname()


def intent(verb: str, *, alive: bool = False, outcome: str | None = None, step: str | None = None):
    return Intent(
        verb=verb,
        pid=4242,
        host=HOST,
        started=1000.0,
        started_at="2026-12-01T00:00:00Z",
        outcome=outcome,
        step=step,
        alive=alive,
        path=str(DIR / "intent.json"),
    )


def worlds(vendor: str) -> list[tuple[str, dict]]:
    """(label, Observation keyword arguments): one world per status the deriver gives."""
    adopt = vendor == "ssh"
    out: list[tuple[str, dict]] = [
        ("scaffolded", {}),
        ("needs_input", {"blocking": (UNSET,)}),
        ("connected", {"infra": UP, "claims": Claim(live=1, gone=0, instances=["i"])}),
        ("unclaimed", {"infra": UP, "claims": Claim(live=0, gone=1)}),
        ("suspended", {"infra": UP, "claims": Claim(live=0, gone=1), "target": "suspended"}),
        (
            "connecting",
            {
                "infra": UP,
                "claims": Claim(live=0, gone=0),
                "intent": intent("connect", outcome="connecting"),
                "daemon": "running",
                "now": 1010.0,
            },
        ),
    ]
    if not adopt:
        out += [
            ("applied", {"infra": UP, "claims": None}),
            ("ready", {"infra": PLANNED}),
            ("ready-over-applied", {"infra": InfraState(**_up(), plan_fresh=True)}),
            ("applying-held", {"infra": InfraState(lock=LockInfo(state="held", path="l"))}),
            ("applying-stale", {"infra": InfraState(lock=LockInfo(state="stale", path="l"))}),
            ("error-partial", {"infra": InfraState(present=True, failed_apply=("a.b",))}),
        ]
    verbs = ["destroy", "suspend", "resume"] + ([] if adopt else ["apply"])
    for verb in verbs:
        for alive in (False, True):
            out.append((f"{verb}-{'in-flight' if alive else 'interrupted'}", _with(verb, alive)))
    for step in ("provision", "deprovision", "suspend", "resume", "wait"):
        out.append((f"reconcile-{step}", {"infra": UP, "intent": intent("reconcile", step=step)}))
    return out


def _up() -> dict:
    return {"present": True, "resources": 2, "outputs": {"worker_host": "h"}}


def _with(verb: str, alive: bool) -> dict:
    return {"infra": UP, "claims": Claim(live=0, gone=1), "intent": intent(verb, alive=alive)}


def observation(vendor: str, gating: frozenset[str], **kw: object) -> Observation:
    backend = "none" if vendor == "ssh" else "terraform"
    rec = ProviderRecord(
        name="lab", vendor=vendor, backend=backend, template_version=1, engine_version="0"
    )  # type: ignore[arg-type]
    if backend == "none":
        kw.pop("infra", None)
    return Observation(
        name="lab",
        dir=DIR,
        dream_dir=None,
        record=rec,
        template=get_template(vendor),
        gating=gating,
        **kw,  # type: ignore[arg-type]
    )


def step_of(command: str, stateful: bool, o: Observation) -> str | None:
    words = shlex.split(command)
    verb = words[2] if words[:2] == ["dreamlake", "provider"] and len(words) > 2 else None
    if verb == "apply":
        return "provision"
    if verb in ("destroy", "delete"):
        return "deprovision"
    if verb == "suspend":
        return "suspend" if stateful else "deprovision"
    if verb == "resume":
        return "resume" if stateful else "provision"
    if verb == "reconcile":
        return o.intent.step if o.intent else None
    return None


CASES = [
    (vendor, label, kw, gating)
    for vendor in VENDORS
    for (label, kw) in worlds(vendor)
    for gating in GATINGS
]


@pytest.mark.parametrize(
    ("vendor", "label", "kw", "gating"),
    CASES,
    ids=[f"{v}-{lbl}-{'+'.join(sorted(g)) or 'none'}" for v, lbl, _, g in CASES],
)
def test_a_gated_step_is_always_flagged_and_an_ungated_one_never(
    vendor: str, label: str, kw: dict, gating: frozenset[str]
) -> None:
    o = observation(vendor, gating, **kw)
    d = derive(o)
    expected = label.split("-")[0]
    if expected == "error":
        assert d.status == "error"
    elif expected in ("destroy", "suspend", "resume", "apply", "reconcile"):
        assert d.status == "applying"
    elif expected == "ready":
        assert d.status == "ready"
    else:
        assert d.status == expected, (label, d)
    if d.next_action is None:
        assert d.status == "connected"
        return
    step = step_of(d.next_action.command, get_template(vendor).stateful_lifecycle, o)
    gated = step is not None and step in gating
    assert (d.next_action.approval is True) == gated, (label, step, d.next_action)
    if gated and step != "provision":
        # a gated lifecycle verb's command is the one that goes through once a person agrees
        assert d.next_action.command.endswith("--yes"), d.next_action


def test_the_default_gates_the_ready_apply_and_the_applying_rerun() -> None:
    """The two cells the contract got wrong: ready and applying, with the default set."""
    for infra in (PLANNED, InfraState(lock=LockInfo(state="held", path="l"))):
        d = derive(observation("ec2", DEFAULT, infra=infra))
        assert d.next_action is not None and d.next_action.approval is True, d
        assert d.next_action.command == "dreamlake provider apply -n lab --yes"
    nothing = frozenset[str]()
    d = derive(observation("ec2", nothing, infra=PLANNED))
    assert d.next_action is not None and d.next_action.approval is None
