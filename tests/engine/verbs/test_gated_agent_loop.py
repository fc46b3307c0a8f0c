"""An agent that runs ``nextAction`` verbatim never performs a gated step.

For each lifecycle step (provision, resume, deprovision, suspend) a world where the
planner picks it, and every gating set that holds it (the spec's aliases included):
the agent starts at the verb a person would type, follows ``nextAction`` through the
real CLI (``--json``), and stops where a next action carries ``approval: true``.
Nothing in the world changed: not the provider's files, not the state, no daemon.
Without a gate, the same world performs the step (checked for ``deprovision``,
whose performer is absent here and says so)."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from dreamlake.cli.main import main
from dreamlake.engine.lifecycle.gating import ACTIONS
from dreamlake.engine.verbs.create import create


def _state(outputs: dict[str, Any]) -> str:
    """A terraform state with outputs only (an applied world, no cloud behind it)."""
    return json.dumps(
        {
            "version": 4,
            "terraform_version": "1.11.4",
            "serial": 1,
            "lineage": "00000000-0000-0000-0000-000000000000",
            "outputs": {k: {"value": v, "type": "string"} for k, v in outputs.items()},
            "resources": [],
        }
    )


@pytest.fixture
def vendors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two decision-free vendors of our own: ``vmish`` (stateful, suspends its
    infrastructure) and ``podish`` (no stateful lifecycle)."""
    base = tmp_path / "own-templates"
    for vendor, kind, stateful in (("vmish", "vm", True), ("podish", "k8s", False)):
        t = base / vendor
        (t / "terraform").mkdir(parents=True)
        (t / "TEMPLATE.json").write_text(
            json.dumps(
                {
                    "vendor": vendor,
                    "version": 1,
                    "kind": kind,
                    "statefulLifecycle": stateful,
                    "backends": ["terraform"],
                    "files": ["terraform/*.tf", "terraform/terraform.tfvars"],
                    "decisions": [],
                }
            )
        )
        (t / "terraform" / "main.tf").write_text('output "worker_host" {\n  value = "h"\n}\n')
        (t / "terraform" / "terraform.tfvars").write_text("# nothing to decide\n")
    monkeypatch.setenv("DREAMLAKE_TEMPLATE_PATH", str(base))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no daemon installed anywhere
    (tmp_path / "home").mkdir()
    return base


def _world(project: Path, step: str, gating: list[str]) -> tuple[str, str]:
    """A provider whose planner step is ``step``; returns (name, the verb to start with)."""
    name = f"w-{step}"
    vendor, verb, target = {
        "provision": ("local", "reconcile", "active"),
        "resume": ("local", "reconcile", "suspended"),  # absent + suspended → resume
        "deprovision": ("podish", "suspend", "active"),
        "suspend": ("vmish", "suspend", "active"),
    }[step]
    create(name, vendor, cwd=project)
    d = project / ".dream" / "providers" / name
    tfvars = d / "terraform" / "terraform.tfvars"
    if vendor == "local":
        tfvars.write_text(
            f'workdir = "{project}/work"\nqueues = ["default"]\nworker_name = "box"\n'
            f'target_status = "{target}"\n'
        )
    outputs = {"worker_host": "h", "power_state": ["running"]}
    (d / "terraform" / "terraform.tfstate").write_text(_state(outputs))
    record = json.loads((d / "provider.json").read_text())
    record["gating"] = gating
    (d / "provider.json").write_text(json.dumps(record, indent=2))
    # The root gates nothing by itself: the provider's own set is the whole set.
    (project / ".dreamrc").write_text("settings:\n  gating: []\n")
    return name, f"dreamlake provider {verb} -n {name}"


def _cli(command: str, cwd: Path, monkeypatch: pytest.MonkeyPatch, *flags: str) -> str:
    argv = shlex.split(command)
    assert argv[0] == "dreamlake"
    monkeypatch.chdir(cwd)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main([*argv[1:], *flags])
    return out.getvalue()


def _run(command: str, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return dict(json.loads(_cli(command, cwd, monkeypatch, "--json")))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / ".dream").rglob("*"))
        if p.is_file()
    }


def _gatings(step: str) -> list[list[str]]:
    """Every set of the four actions holding ``step``, and the spec alias for it."""
    sets = [sorted(c) for n in range(1, 5) for c in itertools.combinations(ACTIONS, n) if step in c]
    alias = {"provision": "PROVISION_ONLY", "suspend": "SUSPEND_ONLY", "resume": "RESUME_ONLY"}
    return sets + ([[alias[step]]] if step in alias else []) + [["ALL"]]


CASES = [
    (step, g) for step in ("provision", "resume", "deprovision", "suspend") for g in _gatings(step)
]


@pytest.mark.parametrize(("step", "gating"), CASES, ids=[f"{s}-{'+'.join(g)}" for s, g in CASES])
def test_agent_stops_at_every_gated_step(
    step: str,
    gating: list[str],
    vendors: Path,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _name, command = _world(project, step, gating)
    before = _snapshot(project)
    prose = _cli(command, project, monkeypatch)  # a person reads which step and why
    assert f"step: {step} —" in prose, prose
    assert "needs a person's yes" in prose and "--yes" in prose, prose
    # the prose says what this step does on this vendor: on ``local`` (provision,
    # resume here) nothing is billed, and it says so
    does = {
        "provision": "nothing is billed",
        "resume": "starts the daemon on this machine again",
        "deprovision": "destroying removes the infrastructure",
        "suspend": "stops it; its state is kept",
    }[step]
    assert does in prose, prose
    if step in ("suspend", "deprovision", "provision", "resume"):
        assert "spends money" not in prose and "applying spends" not in prose, prose
    if step == "deprovision":  # the stateless path, said out loud
        assert "podish has no stateful lifecycle" in prose and "destroys it" in prose, prose
    ran: list[str] = []
    for _ in range(6):
        ran.append(command)
        out = _run(command, project, monkeypatch)
        action = out["nextAction"]
        if action is None or action.get("approval"):
            break
        if out["status"] == "error" or action["kind"] != "run":
            break
        command = action["command"]
    else:
        pytest.fail(f"the loop did not settle: {ran}")
    assert action is not None and action["approval"] is True, out
    assert out["status"] == "needs_input" and out["files"] == [], out
    assert action["command"].endswith("--yes")
    assert not any("--yes" in c for c in ran), ran  # the agent never said yes itself
    assert _snapshot(project) == before  # the world is untouched


def test_ungated_deprovision_is_attempted(
    vendors: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same world without the gate goes on to destroy (the stateless suspend): the
    destroy really runs terraform, which fails on this hand-made world (no plugin,
    no cloud) and says so, with plan as the recovery — never apply."""
    _name, command = _world(project, "deprovision", ["NONE"])
    out = _run(command, project, monkeypatch)
    assert not (out["nextAction"] or {}).get("approval"), out
    assert out["status"] == "error" and out["kind"] == "terraform", out
    assert " plan " in f"{out['nextAction']['command']} ", out


def test_deprovision_with_yes_finds_the_provider_without_a_dreamrc(
    vendors: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The root is the folder the run started in (no .dreamrc, no --dream-dir): the
    destroy behind the stateless suspend acts on the same provider, not on a root
    of its own below it that holds none."""
    _name, command = _world(project, "deprovision", ["NONE"])
    (project / ".dreamrc").unlink()  # the built-in default gates deprovision: say yes
    out = _run(command + " --yes", project, monkeypatch)
    assert out["kind"] != "unknown_provider", out
    assert out["status"] == "error" and out["kind"] == "terraform", out
    assert " plan " in f"{out['nextAction']['command']} ", out
