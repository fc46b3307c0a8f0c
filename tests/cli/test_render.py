"""Prose in the spirit of the spec's samples, state by state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from dreamlake.cli.render import render
from dreamlake.engine.contract.result import ProviderLifecycleResult


def result(**kw: Any) -> ProviderLifecycleResult:
    base: dict[str, Any] = {"provider": "aws-demo", "server": "", "namespace": "default"}
    base.update(kw)
    return ProviderLifecycleResult.model_validate(base)


def test_ready() -> None:
    text = render(
        result(
            status="ready",
            plan={"add": 14, "change": 0, "destroy": 0},
            next_action={"kind": "run", "command": "dreamlake provider apply -n aws-demo --yes"},
        )
    )
    assert "✓ plan is clean — 14 to add, 0 to change, 0 to destroy" in text
    assert "nothing has been applied. The next command spends money." in text
    assert text.endswith("next: dreamlake provider apply -n aws-demo --yes")


def test_applying_held_and_interrupted() -> None:
    since = (datetime.now(UTC) - timedelta(minutes=4, seconds=12)).isoformat()
    held = render(
        result(
            status="applying",
            lock={"state": "held", "since": since, "who": "me@box"},
            next_action={"kind": "run", "command": "dreamlake provider apply -n aws-demo --yes"},
        )
    )
    assert "⚠ an apply is in progress or was interrupted" in held
    assert "held 00:04:1" in held
    assert "terraform holds a state lock (the state, held 00:04:1" in held  # the spec's line
    assert held.endswith(
        "next: dreamlake provider apply -n aws-demo --yes   # re-run; terraform resumes"
    )
    stale = render(
        result(
            status="applying", lock={"state": "stale"}, next_action={"kind": "run", "command": "x"}
        )
    )
    assert "interrupted" in stale and "nothing holds it now" in stale
    assert "resumes" not in stale  # only an apply is resumed by a re-run


def test_applying_from_plan_says_nothing_of_resuming() -> None:
    """plan meeting a held lock re-runs plan: terraform resumes nothing there."""
    text = render(
        result(
            status="applying",
            lock={"state": "held"},
            next_action={"kind": "run", "command": "dreamlake provider plan -n aws-demo"},
        )
    )
    assert text.endswith("next: dreamlake provider plan -n aws-demo")


def test_connected_lists_workers_and_next_none() -> None:
    seen = (datetime.now(UTC) - timedelta(seconds=12)).isoformat()
    text = render(
        result(
            status="connected",
            next_action=None,
            claim={
                "live": 2,
                "gone": 0,
                "instances": ["i-0abc", "i-0def"],
                "workers": [
                    {
                        "instanceId": "i-0abc",
                        "state": "active",
                        "lastSeen": seen,
                        "queues": ["gpu", "cpu"],
                    },
                    {"instanceId": "i-0def", "state": "joining", "queues": ["gpu"]},
                ],
            },
        )
    )
    assert "✓ connected — 2 live workers claiming 'aws-demo'" in text
    assert any(
        line.startswith("i-0abc active 1") and line.endswith("queues: gpu, cpu")
        for line in text.splitlines()
    )
    assert "i-0def joining queues: gpu" in text
    assert text.endswith("next: (none)")


def test_unclaimed_is_not_a_fault() -> None:
    text = render(
        result(
            status="unclaimed",
            claim={"live": 0, "gone": 1, "instances": []},
            next_action={"kind": "run", "command": "dreamlake provider connect -n aws-demo"},
        )
    )
    assert "⚠ unclaimed — no daemon is claiming 'aws-demo'" in text
    assert "this is a normal state, not a fault:" in text
    assert "it means nothing can launch into this account right now." in text
    assert "✗" not in text
    assert text.endswith("next: dreamlake provider connect -n aws-demo")


def test_needs_input_lines() -> None:
    text = render(
        result(
            status="needs_input",
            dir="/p/.dream/providers/aws-demo",
            blocking=[
                {
                    "key": "region",
                    "reason": "unset",
                    "file": "/p/t.tfvars",
                    "line": 3,
                    "observed": ["us-east-1", "us-west-2"],
                    "why": "Pick the region.",
                },
                {"key": "node_type", "reason": "invalid", "message": "must be a GPU type"},
            ],
            next_action={
                "kind": "edit_then_continue",
                "file": "/p/t.tfvars",
                "command": "dreamlake provider create -n aws-demo --continue",
            },
        )
    )
    assert "⚠ needs decisions before it can apply:" in text
    assert "   · region — not set. account has resources in us-east-1, us-west-2" in text
    assert "   · node type — invalid: must be a GPU type" in text
    assert text.endswith(
        "next: edit /p/t.tfvars, then dreamlake provider create -n aws-demo --continue"
    )


def test_error_and_shell_next() -> None:
    text = render(
        result(
            status="error",
            error="ssh refused the key",
            next_action={"kind": "shell", "command": "ssh-copy-id you@ops.internal"},
        )
    )
    assert text.startswith("✗ ssh refused the key")
    assert text.endswith("next: ssh-copy-id you@ops.internal")


def test_degraded_is_explained() -> None:
    text = render(
        result(
            status="applied",
            degraded=["no-probe", "no-lakeshore"],
            resources=3,
            next_action={"kind": "run", "command": "c"},
        )
    )
    assert "✓ applied — 3 resources in state" in text
    assert "degraded: no-probe, no-lakeshore" in text


def test_suspended_says_the_state_is_kept() -> None:
    text = render(
        result(
            status="suspended",
            next_action={"kind": "run", "command": "dreamlake provider resume -n aws-demo"},
        )
    )
    assert "suspended — 'aws-demo' was stopped on purpose; its state is kept" in text
    assert "✗" not in text  # a deliberate stop is not a failure
    assert text.endswith("next: dreamlake provider resume -n aws-demo")


def test_a_next_action_needing_approval_says_so() -> None:
    text = render(
        result(
            status="applied",
            next_action={
                "kind": "run",
                "command": "dreamlake provider destroy -n aws-demo --yes",
                "approval": True,
            },
        )
    )
    assert text.splitlines()[-1].startswith("next: dreamlake provider destroy -n aws-demo --yes")
    assert "needs a person's yes" in text.splitlines()[-1]


def test_an_approval_keeps_the_file_to_edit_and_the_host() -> None:
    """The approval mark is added to what the kind says, never in place of it."""
    edit = render(
        result(
            status="needs_input",
            next_action={
                "kind": "edit_then_continue",
                "file": "/p/t.tfvars",
                "command": "dreamlake provider create -n aws-demo --continue",
                "approval": True,
            },
        )
    ).splitlines()[-1]
    assert edit.startswith("next: edit /p/t.tfvars, then dreamlake provider create")
    assert "needs a person's yes" in edit
    shell = render(
        result(
            status="error",
            error="x",
            next_action={"kind": "shell", "command": "sudo x", "host": "h1", "approval": True},
        )
    ).splitlines()[-1]
    assert shell.startswith("next: sudo x") and "on h1" in shell and "needs a person's yes" in shell


def test_decisions_to_settle_name_the_set_command_too() -> None:
    """Without an editor (or over MCP) the same edit is `provider set`."""
    lines = render(
        result(
            status="needs_input",
            blocking=[
                {"key": "region", "reason": "unset", "file": "/p/t.tfvars"},
                {"key": "region", "reason": "conflict", "file": "/p/t.auto.tfvars"},
                {"key": "zone", "reason": "placeholder", "file": "/p/t.tfvars"},
            ],
            next_action={
                "kind": "edit_then_continue",
                "file": "/p/t.tfvars",
                "command": "dreamlake provider create -n aws-demo --continue --dream-dir '/a b'",
            },
        )
    ).splitlines()
    assert lines[-2] == (
        "or set them from here: dreamlake provider set -n aws-demo --dream-dir '/a b' "
        "region=VALUE zone=VALUE"
    )
    assert lines[-1].startswith("next: edit /p/t.tfvars, then")


@pytest.mark.parametrize(
    ("vendor", "command", "says", "never"),
    [
        ("ec2", "dreamlake provider resume -n gpu --yes", "hourly bill", "what that does is"),
        ("ssh", "dreamlake provider connect -n box", "nothing is billed", "spends money"),
        ("local", "dreamlake provider apply -n lab --yes", "nothing is billed", "spends money"),
        ("kube", "dreamlake provider resume -n k --yes", "EKS cluster", "what that does is"),
    ],
)
def test_a_gated_step_says_what_it_does_on_that_vendor(
    vendor: str, command: str, says: str, never: str
) -> None:
    """The approval mark names what the step does on the provider's vendor (its
    TEMPLATE.json's words): an ec2 resume starts a bill, an ssh connect spends nothing;
    without the stateful lifecycle resume is provisioning."""
    nxt = {"kind": "run", "command": command, "approval": True}
    line = render(result(status="suspended", vendor=vendor, next_action=nxt)).splitlines()[-1]
    assert "needs a person's yes" in line and says in line and never not in line, line


def test_an_untrusted_control_plane_says_why(tmp_path: Any) -> None:
    """``lakeshore-untrusted``: the prose names what the request met (here a CA file
    that is missing), so a missing CA is told from a wrong one."""
    from dreamlake.engine.world.lakeshore import ControlPlane, fetch_claims, unreachable

    url = "https://127.0.0.1:9"
    ca = tmp_path / "missing-ca.crt"
    assert fetch_claims(ControlPlane(url=url, token="t", ca=str(ca)), "aws-demo") is None
    text = render(
        result(
            status="scaffolded",
            server=url,
            degraded=list(unreachable(url)),
            next_action={"kind": "run", "command": "c"},
        )
    )
    line = next(ln for ln in text.splitlines() if ln.startswith("degraded:"))
    assert line.startswith("degraded: no-lakeshore, lakeshore-untrusted (")
    assert f"the CA certificate {ca} cannot be read" in line and "docs/deploy.md" in line
