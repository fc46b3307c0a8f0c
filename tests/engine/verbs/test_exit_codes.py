"""The spec's verb × world table, row by row, with the exit code of each: 0 for
every coherent answer (a person's "no", a failure *found* in the world included),
1 only when the tool could not do its job.

Real verbs against the real terraform and the shipped ``local`` template (offline:
it needs no provider plugin), the ``ec2`` template for a decision-bearing
scaffold, and the ``ssh`` vendor for adopting."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import at_least, available
from dreamlake.engine.contract.result import ProviderLifecycleResult
from dreamlake.engine.lifecycle.pool import acquire
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.delete import delete
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status
from dreamlake.engine.world.intent import write_intent

NEW = [(v, p) for v, p in available() if at_least(v, "1.4.0")]
GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'
DEAD_PID = 2**22 + 17
Row = Callable[[Path], ProviderLifecycleResult]


@pytest.fixture
def tf(monkeypatch: pytest.MonkeyPatch) -> str:
    if not NEW:
        pytest.skip("needs terraform >= 1.4 (the builtin terraform_data resource)")
    monkeypatch.setenv("TERRAFORM_BINARY", NEW[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    return NEW[-1][1]


def local(p: Path, tfvars: str = GOOD, extra: str | None = None) -> Path:
    create("lab", "local", dream_dir=str(p), probe=False)
    d = p / ".dream/providers/lab"
    (d / "terraform/terraform.tfvars").write_text(tfvars)
    if extra is not None:
        (d / "terraform/extra.tf").write_text(extra)
    return d


def planned(p: Path, extra: str | None = None) -> Path:
    d = local(p, extra=extra)
    assert plan("lab", dream_dir=str(p)).status == "ready"
    return d


def applied(p: Path, extra: str | None = None) -> Path:
    d = planned(p, extra)
    assert apply("lab", yes=True, dream_dir=str(p)).status == "applied"
    return d


def _half_applied(p: Path) -> ProviderLifecycleResult:
    bad = (
        'resource "terraform_data" "ok" {}\n'
        'resource "terraform_data" "bad" {\n  depends_on = [terraform_data.ok]\n'
        '  provisioner "local-exec" {\n    command = "exit 3"\n  }\n}\n'
    )
    planned(p, bad)
    assert apply("lab", yes=True, dream_dir=str(p)).exit_code == 1  # terraform failed
    return status("lab", dream_dir=str(p))


def _interrupted(p: Path) -> Path:
    d = applied(p)
    write_intent(d, "destroy", yes=True, step="deprovision", pid=DEAD_PID)
    return d


def _no_binary(p: Path, monkeypatch: pytest.MonkeyPatch) -> ProviderLifecycleResult:
    local(p)
    monkeypatch.setenv("TERRAFORM_BINARY", str(p / "no-such-terraform"))
    return plan("lab", dream_dir=str(p))


ROWS: list[tuple[str, Row, str, int]] = [
    # create
    (
        "create --continue, decisions now resolved",
        lambda p: (local(p), create("lab", continue_=True, dream_dir=str(p), probe=False))[1],
        "scaffolded",
        0,
    ),
    (
        "create, decisions unresolved",
        lambda p: create("lab", "ec2", dream_dir=str(p), probe=False),
        "needs_input",
        0,
    ),
    ("create, no such vendor", lambda p: create("lab", "nope", dream_dir=str(p)), "error", 1),
    (
        "create again, same vendor",
        lambda p: (local(p), create("lab", "local", dream_dir=str(p), probe=False))[1],
        "exists",
        0,
    ),
    (
        "create again, other vendor",
        lambda p: (local(p), create("lab", "ec2", dream_dir=str(p), probe=False))[1],
        "error",
        1,
    ),
    (
        "create --continue, still unresolved",
        lambda p: (
            create("lab", "ec2", dream_dir=str(p), probe=False),
            create("lab", continue_=True, dream_dir=str(p), probe=False),
        )[1],
        "needs_input",
        0,
    ),
    # plan
    ("plan clean", lambda p: plan("lab", dream_dir=str(local(p).parent.parent.parent)), "ready", 0),
    (
        "plan, a variable missing",
        lambda p: (local(p, tfvars='queues = ["a"]\n'), plan("lab", dream_dir=str(p)))[1],
        "needs_input",
        0,
    ),
    (
        "plan, terraform errors",
        lambda p: (local(p, extra="resource {\n"), plan("lab", dream_dir=str(p)))[1],
        "error",
        1,
    ),
    # apply
    (
        "apply --yes",
        lambda p: (planned(p), apply("lab", yes=True, dream_dir=str(p)))[1],
        "applied",
        0,
    ),
    (
        "apply without --yes",
        lambda p: (planned(p), apply("lab", dream_dir=str(p)))[1],
        "needs_input",
        0,
    ),
    (
        "apply --yes, a run interrupted",
        lambda p: (_interrupted(p), apply("lab", yes=True, dream_dir=str(p)))[1],
        "applying",
        0,
    ),
    # connect
    (
        "connect, no host anywhere",
        lambda p: (create("box", "ssh", dream_dir=str(p)), connect("box", dream_dir=str(p)))[1],
        "needs_input",
        0,
    ),
    # status: recomputed from the world, rc 0 in every coherent state
    (
        "status scaffolded",
        lambda p: (local(p), status("lab", dream_dir=str(p)))[1],
        "scaffolded",
        0,
    ),
    ("status ready", lambda p: (planned(p), status("lab", dream_dir=str(p)))[1], "ready", 0),
    (
        "status applied/unclaimed",
        lambda p: (applied(p), status("lab", dream_dir=str(p)))[1],
        "applied",
        0,
    ),
    (
        "status interrupted",
        lambda p: (_interrupted(p), status("lab", dream_dir=str(p)))[1],
        "applying",
        0,
    ),
    ("status half-applied", _half_applied, "error", 0),
    ("status, no such provider", lambda p: status("nope", dream_dir=str(p)), "error", 1),
    # a person's no
    (
        "delete while infrastructure exists",
        lambda p: (applied(p), delete("lab", yes=True, dream_dir=str(p)))[1],
        "needs_input",
        0,
    ),
    (
        "delete without --yes, no terminal",
        lambda p: (local(p), delete("lab", dream_dir=str(p)))[1],
        "needs_input",
        0,
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("row", "run", "state", "rc"), ROWS, ids=[r[0] for r in ROWS])
def test_every_row_of_the_table(
    tf: str, project: Path, row: str, run: Row, state: str, rc: int
) -> None:
    res = run(project)
    got = "applied" if state == "applied" and res.status == "unclaimed" else res.status
    assert (got, res.exit_code) == (state, rc), res.to_json()
    assert res.next_action is not None or res.status == "connected"


def test_no_binary_is_the_tool_failing(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    res = _no_binary(project, monkeypatch)
    assert (res.status, res.kind, res.exit_code) == ("error", "no_binary", 1)
    assert res.next_action is not None and res.next_action.approval is True  # installs software


def test_a_pool_with_every_member_taken_is_a_coherent_no(project: Path) -> None:
    create("m1", "ssh", dream_dir=str(project))
    d = project / ".dream/providers/m1"
    rec = json.loads((d / "provider.json").read_text())
    rec["pool"] = "gpu"
    (d / "provider.json").write_text(json.dumps(rec))
    res = acquire("gpu", dream_dir=str(project))
    assert (res.status, res.kind, res.exit_code) == ("needs_input", "pool_exhausted", 0)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("gating", "effective"),
    [
        (None, {"provision", "deprovision"}),
        ([], set()),
        (["ALL"], {"provision", "deprovision", "suspend", "resume"}),
        (["SUSPEND_ONLY"], {"suspend"}),
        (["provision"], {"provision"}),
        (["deprovision"], {"deprovision"}),
    ],
)
def test_every_verb_flags_the_gated_steps_it_offers(
    tf: str, project: Path, gating: list[str] | None, effective: set[str]
) -> None:
    """The same apply/destroy offered by plan, apply, status and destroy carries the
    flag exactly when its step is in the effective set (``None``: the built-in
    default, provision and deprovision)."""
    if gating is not None:
        (project / ".dreamrc").write_text(f"settings:\n  gating: {json.dumps(gating)}\n")
    d = local(project)
    dd = str(project)
    for res in (plan("lab", dream_dir=dd), apply("lab", dream_dir=dd), status("lab", dream_dir=dd)):
        assert res.next_action is not None and " apply " in f"{res.next_action.command} "
        assert (res.next_action.approval is True) == ("provision" in effective), res.to_json()
    assert apply("lab", yes=True, dream_dir=dd).status == "applied"
    from dreamlake.engine.verbs.destroy import destroy

    preview = destroy("lab", dream_dir=dd)
    assert preview.next_action is not None and " destroy " in f"{preview.next_action.command} "
    assert (preview.next_action.approval is True) == ("deprovision" in effective)
    write_intent(d, "destroy", yes=True, step="deprovision", pid=DEAD_PID)
    for res in (
        status("lab", dream_dir=dd),
        plan("lab", dream_dir=dd),
        connect("lab", dream_dir=dd),
    ):
        assert res.status == "applying" and res.next_action is not None
        assert (res.next_action.approval is True) == ("deprovision" in effective)
