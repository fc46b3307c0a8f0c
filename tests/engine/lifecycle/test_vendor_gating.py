"""Gating follows what a step costs on the vendor: each shipped TEMPLATE.json
declares its steps (``steps.<step>.gated`` and what the step ``does`` there).

``resume`` starts a stopped ``ec2`` / ``gce`` instance and its bill: gated by
default, on ``status``'s next action, on ``resume`` itself and on ``pool acquire``
alike. On ``local`` / ``ssh`` it restarts a daemon on a host that is already
there: not gated. The words a person is asked with say what the step does on that
vendor (no "spends money" for an SSH host)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dreamlake.engine.contract.errors import UsageError
from dreamlake.engine.lifecycle.gating import (
    DEFAULT,
    STEP_WORDS,
    effective_gating,
    step_words,
    vendor_default,
)
from dreamlake.engine.lifecycle.pool import acquire
from dreamlake.engine.lifecycle.target import read_target
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.resume import resume
from dreamlake.engine.verbs.status import status
from dreamlake.engine.world.paths import ProviderPaths
from dreamlake.engine.world.vendors import Template, get_template


@pytest.mark.parametrize(
    ("vendor", "gated"),
    [
        ("ec2", {"provision", "deprovision", "resume"}),
        ("gce", {"provision", "deprovision", "resume"}),
        ("kube", {"provision", "deprovision"}),
        ("local", {"provision", "deprovision"}),
        ("ssh", {"provision", "deprovision"}),
    ],
)
def test_each_vendor_declares_what_its_steps_cost(vendor: str, gated: set[str]) -> None:
    t = get_template(vendor)
    assert vendor_default(t) == gated
    # Every shipped vendor says, for each step it declares, what it does there.
    for step, decl in t.raw["steps"].items():
        assert isinstance(decl["gated"], bool) and decl["does"], (vendor, step)
        assert step_words(step, t) == decl["does"]


def test_no_ssh_or_local_step_is_said_to_spend_money() -> None:
    for vendor in ("ssh", "local"):
        t = get_template(vendor)
        for step in ("provision", "deprovision", "suspend", "resume"):
            assert "spends money" not in step_words(step, t), (vendor, step)
    assert "bill" in step_words("resume", get_template("ec2"))


def test_a_vendor_that_declares_nothing_gets_the_built_in_default() -> None:
    bare = Template("bare", 1, "vm", ("terraform",), (), (), raw={})
    assert vendor_default(bare) == DEFAULT
    assert vendor_default(None) == DEFAULT
    assert step_words("provision", bare) == STEP_WORDS["provision"]


@pytest.mark.parametrize(
    "steps",
    [[], {"destroy": {"gated": True}}, {"resume": True}, {"resume": {"gated": "yes"}}],
)
def test_a_bad_declaration_is_a_usage_error(steps: object) -> None:
    t = Template("own", 1, "vm", ("terraform",), (), (), raw={"steps": steps})
    with pytest.raises(UsageError):
        vendor_default(t)


def test_dreamrc_and_provider_json_still_decide(tmp_path: Path) -> None:
    ec2 = get_template("ec2")
    assert "resume" in effective_gating(tmp_path, None, "p", ec2)
    # the provider adds gates to the vendor's default
    assert effective_gating(tmp_path, ["suspend"], "p", ec2) >= {"suspend", "resume"}
    # a root that says what it wants replaces the default (and says so in .dreamrc)
    (tmp_path / ".dreamrc").write_text("settings:\n  gating: [provision]\n")
    assert effective_gating(tmp_path, None, "p", ec2) == {"provision"}


# ---------------------------------------------------------------------------
# a suspended ec2 provider: its stopped instance as the terraform state records it


def _suspended_ec2(project: Path, name: str, pool: str | None = None) -> ProviderPaths:
    create(name, "ec2", cwd=project)
    paths = ProviderPaths(project / ".dream" / "providers" / name)
    if pool:
        record = json.loads(paths.provider_json.read_text())
        record["pool"] = pool
        paths.provider_json.write_text(json.dumps(record, indent=2))
    tf = paths.terraform
    (tf / "terraform.tfvars").write_text(
        'region = "us-east-1"\nsubnet_id = "subnet-0123456789abcdef0"\n'
        'instance_type = "g5.xlarge"\nami_id = "ami-0123456789abcdef0"\n'
        'target_status = "suspended"\n'
    )
    instance = {"mode": "managed", "type": "aws_instance", "name": "worker", "provider": "p",
                "instances": [{"attributes": {"id": "i-0abc"}}]}  # fmt: skip
    power = {"mode": "managed", "type": "aws_ec2_instance_state", "name": "worker",
             "provider": "p", "instances": [{"attributes": {"state": "stopped"}}]}  # fmt: skip
    (tf / "terraform.tfstate").write_text(
        json.dumps(
            {
                "version": 4,
                "serial": 3,
                "lineage": "l",
                "outputs": {"instance_ids": {"value": ["i-0abc"], "type": ["list", "string"]}},
                "resources": [instance, power],
            }
        )
    )
    return paths


def test_a_suspended_ec2_provider_resumes_only_with_a_yes(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    paths = _suspended_ec2(project, "gpu")
    before = sorted((p, p.stat().st_mtime_ns) for p in paths.dir.rglob("*") if p.is_file())

    st = status("gpu", cwd=project, probe=False)
    assert st.status == "suspended", (st, st.notes)
    assert st.next_action is not None
    assert st.next_action.command == "dreamlake provider resume -n gpu --yes"
    assert st.next_action.approval is True

    res = resume("gpu", cwd=project)
    assert (res.status, res.files) == ("needs_input", []), (res, res.notes)
    assert res.next_action is not None
    assert (res.next_action.command, res.next_action.approval) == (
        st.next_action.command,
        True,
    )
    assert "bill" in (res.headline or "") and "spends money" not in (res.headline or "")
    after = sorted((p, p.stat().st_mtime_ns) for p in paths.dir.rglob("*") if p.is_file())
    assert after == before  # nothing touched: not even the target


def test_pool_acquire_of_an_ec2_member_needs_a_yes(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    paths = _suspended_ec2(project, "gpu", pool="gpus")
    res = acquire("gpus", cwd=project)
    assert res.status == "needs_input", (res, res.notes)
    assert res.next_action is not None and res.next_action.approval is True
    assert read_target(paths, "terraform") == "suspended"  # given back: still free
