"""The wire contract: camelCase, nextAction always present, schema snapshot."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from dreamlake.engine.contract.result import (
    STATUSES,
    Blocking,
    EditThenContinue,
    ProviderLifecycleResult,
    Run,
    Shell,
    json_schema,
)
from pydantic import ValidationError

SNAPSHOT = Path(__file__).parent / "snapshots" / "result.schema.json"


def _result(**kw: object) -> ProviderLifecycleResult:
    base: dict[str, object] = {
        "status": "scaffolded",
        "provider": "p",
        "server": "",
        "namespace": "default",
        "next_action": {"kind": "run", "command": "dreamlake provider plan -n p"},
    }
    if kw.get("status") == "connected":
        base["next_action"] = None
    base.update(kw)
    return ProviderLifecycleResult.model_validate(base)


def test_ten_states_and_suspended() -> None:
    """The spec's ten, in its order, then the stateful lifecycle's ``suspended``."""
    assert STATUSES == (
        "scaffolded",
        "needs_input",
        "ready",
        "applying",
        "applied",
        "connecting",
        "unclaimed",
        "connected",
        "exists",
        "error",
        "suspended",
    )


def test_approval_is_omitted_unless_set() -> None:
    """A gated step carries ``approval: true``; an ordinary one says nothing of it."""
    plain = _result(next_action=Run(command="dreamlake provider plan -n p")).to_wire()
    assert plain["nextAction"] == {"kind": "run", "command": "dreamlake provider plan -n p"}
    gated = _result(
        next_action=Run(command="dreamlake provider destroy -n p --yes", approval=True)
    ).to_wire()
    assert gated["nextAction"]["approval"] is True


def test_next_action_always_serialized_even_when_null() -> None:
    wire = _result(status="connected").to_wire()
    assert "nextAction" in wire and wire["nextAction"] is None


def test_camel_case_and_omitted_optionals() -> None:
    r = _result(
        status="needs_input",
        next_action=EditThenContinue(
            file="/a/terraform.tfvars", command="dreamlake provider create -n p --continue"
        ),
        blocking=[
            Blocking(key="region", reason="unset", file="/a/terraform.tfvars", line=3, why="w")
        ],
        files=[],
    )
    wire = r.to_wire()
    assert wire["nextAction"] == {
        "kind": "edit_then_continue",
        "file": "/a/terraform.tfvars",
        "command": "dreamlake provider create -n p --continue",
    }
    assert wire["files"] == []  # an empty write list is the proof of a no-op
    assert "observed" not in wire["blocking"][0]  # absent, not empty
    assert "plan" not in wire and "claim" not in wire


@pytest.mark.parametrize("status", STATUSES)
def test_next_action_is_null_exactly_when_connected(status: str) -> None:
    """The spec's rule, enforced by the model: no verb can hand an agent a null
    nextAction in any other state, nor a next step once connected."""
    if status == "connected":
        with pytest.raises(ValidationError, match="exactly when"):
            _result(status=status, next_action={"kind": "run", "command": "x"})
    else:
        with pytest.raises(ValidationError, match="exactly when"):
            _result(status=status, next_action=None)


def test_next_action_union_is_discriminated() -> None:
    r = _result(next_action={"kind": "shell", "command": "ssh-copy-id u@h", "host": "h"})
    assert isinstance(r.next_action, Shell)
    r = _result(next_action={"kind": "run", "command": "x"})
    assert isinstance(r.next_action, Run)
    with pytest.raises(ValidationError):
        _result(next_action={"kind": "dance", "command": "x"})


def test_next_action_is_required() -> None:
    with pytest.raises(ValidationError):
        ProviderLifecycleResult.model_validate(
            {"status": "scaffolded", "provider": "p", "server": "", "namespace": "d"}
        )


def test_blocking_reason_is_closed() -> None:
    with pytest.raises(ValidationError):
        Blocking(key="k", reason="maybe")  # type: ignore[arg-type]


def test_exit_code_only_error_is_one() -> None:
    for s in STATUSES:
        assert _result(status=s).exit_code == (1 if s == "error" else 0)


def test_round_trip_from_wire() -> None:
    r = _result(
        status="ready", plan={"add": 1, "change": 0, "destroy": 2}, next_action=Run(command="c")
    )
    again = ProviderLifecycleResult.model_validate(json.loads(r.to_json()))
    assert again == r


def test_schema_snapshot() -> None:
    """A contract change must be deliberate: regenerate with DREAMLAKE_UPDATE_SNAPSHOTS=1."""
    current = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("DREAMLAKE_UPDATE_SNAPSHOTS") == "1" or not SNAPSHOT.exists():
        SNAPSHOT.write_text(current)
    assert current == SNAPSHOT.read_text(), "the result contract changed; see the snapshot diff"
    schema = json.loads(current)
    assert "nextAction" in schema["required"]
    assert set(schema["properties"]["status"]["enum"]) == set(STATUSES)


def test_notes_are_not_shared_with_a_copy() -> None:
    a = _result().with_notes("one")
    b = a.model_copy(update={"status": "ready"})
    b.with_notes("two")
    assert a.notes == ["one"] and b.notes == ["one", "two"]


def test_importing_errors_does_not_load_pydantic() -> None:
    """The daemon imports dreamlake.engine.contract.errors: that must stay cheap."""
    import subprocess
    import sys

    code = "import sys, dreamlake.engine.contract.errors;print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


_DRIFT = [
    {
        "address": "aws_security_group.web",
        "action": "update",
        "attributes": ["ingress", "tags.team"],
        "seen_at": "2026-01-01T00:00:00+00:00",
    }
]


def test_drift_member_is_camel_case_and_lets_connected_name_plan() -> None:
    """A drifted connected provider's next action is plan (it shows what an apply
    would put back); without a drift list connected stays the one null."""
    r = _result(
        status="connected",
        degraded=["drift"],
        drift=_DRIFT,
        next_action={"kind": "run", "command": "dreamlake provider plan -n p"},
    )
    wire = r.to_wire()
    assert wire["drift"] == [
        {
            "address": "aws_security_group.web",
            "action": "update",
            "attributes": ["ingress", "tags.team"],
            "seenAt": "2026-01-01T00:00:00+00:00",
        }
    ]
    assert ProviderLifecycleResult.model_validate(json.loads(r.to_json())) == r
    with pytest.raises(ValidationError, match="exactly when"):
        _result(status="connected", drift=_DRIFT, next_action=None)
    props = json_schema()["properties"]
    assert "drift" in props and "drift" in props["degraded"]["description"]
