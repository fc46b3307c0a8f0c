"""The plan the console script starts ahead (``early``): taken where the backend's
facts are the same, and otherwise stopped without a trace; never where ``init``
must run or a run is in flight; the saved plan survives a run that ends before
planning. Real terraform (each binary found), the shipped ``local`` template."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import backend, early, observe_state
from dreamlake.engine.backends.terraform.lockinfo import probe_fcntl
from dreamlake.engine.contract import events
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status
from dreamlake.engine.world.intent import recording
from held_start import interrupted_after_start

GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'


@pytest.fixture(autouse=True)
def _settled() -> Iterator[None]:
    yield
    early.settle()  # a failed test leaves no terraform behind


def _planned(project: Path) -> Path:
    """A ``local`` provider planned once (initialised, its init record written)."""
    create("lab", "local", dream_dir=str(project), probe=False)
    pdir = project / ".dream/providers/lab"
    (pdir / "terraform/terraform.tfvars").write_text(GOOD)
    assert plan("lab", dream_dir=str(project)).status == "ready"
    return pdir


def _leftovers(pdir: Path) -> list[str]:
    return sorted(p.name for p in pdir.rglob(f"{early.EARLY_PREFIX}*.tfplan"))


def _steps(project: Path) -> tuple[str, list[str]]:
    seen: list[events.ProgressEvent] = []
    with events.recording(seen.append, verb="plan", provider="lab"):
        res = plan("lab", dream_dir=str(project))
    return res.to_json(), [e.step for e in seen if e.type == "step" and e.step]


def _own_plan_runs(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    real = backend._plan_run

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(backend, "_plan_run", counted)
    return calls


def test_a_plan_started_ahead_is_taken_and_answers_as_a_plan_of_its_own(
    terraform_binary: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdir = _planned(project)
    plain = plan("lab", dream_dir=str(project)).to_json()
    runs = _own_plan_runs(monkeypatch)
    remembered: list[object] = []
    monkeypatch.setattr(early, "remember", lambda *a: remembered.append(a))
    assert early.start_plan("lab", str(project))
    assert early.pending(pdir / "terraform")
    ahead = plan("lab", dream_dir=str(project)).to_json()
    assert ahead == plain  # the same document, byte for byte
    assert runs == []  # the plan started ahead was the plan: no second terraform run
    assert remembered == []  # started from the record with these facts: it stands
    assert not early.pending(pdir / "terraform") and _leftovers(pdir) == []
    assert status("lab", dream_dir=str(project)).status == "ready"  # tfplan is the recorded one


def test_a_blocked_run_leaves_the_saved_plan_it_found(terraform_binary: str, project: Path) -> None:
    pdir = _planned(project)
    tf = pdir / "terraform"
    saved = {n: (tf / n).read_bytes() for n in ("tfplan", "tfplan.meta.json")}
    (tf / "terraform.tfvars").write_text(GOOD.replace('worker_name = "lab-1"\n', ""))
    assert early.start_plan("lab", str(project))  # what init reads did not change
    res = plan("lab", dream_dir=str(project))
    early.settle()  # as the console script does when the command ends
    assert res.status == "needs_input" and {b.key for b in res.blocking or []} == {"worker_name"}
    assert res.to_json() == plan("lab", dream_dir=str(project)).to_json()
    assert {n: (tf / n).read_bytes() for n in saved} == saved
    assert _leftovers(pdir) == [] and not (tf / ".terraform.tfstate.lock.info").exists()
    # After a Ctrl-C (terraform had it too) it is waited for, not signalled again.
    assert early.start_plan("lab", str(project))
    early.settle(stop=False)
    assert not early.pending(tf) and _leftovers(pdir) == []
    assert {n: (tf / n).read_bytes() for n in saved} == saved


def test_a_plan_started_with_other_facts_is_stopped_and_planned_again(
    terraform_binary: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdir = _planned(project)
    plain = plan("lab", dream_dir=str(project)).to_json()
    assert early.start_plan("lab", str(project))
    monkeypatch.setenv("DREAMLAKE_EARLY_TEST", "another environment")
    runs = _own_plan_runs(monkeypatch)
    assert plan("lab", dream_dir=str(project)).to_json() == plain
    assert len(runs) == 1 and _leftovers(pdir) == []
    assert status("lab", dream_dir=str(project)).status == "ready"


@pytest.mark.parametrize(
    "edit",
    ["versions", "provider block", "lock file"],
)
def test_an_edit_of_what_init_reads_stops_the_plan_started_ahead_and_inits(
    terraform_binary: str, project: Path, edit: str
) -> None:
    pdir = _planned(project)
    tf = pdir / "terraform"
    if edit == "versions":
        (tf / "versions.tf").write_text('terraform {\n  required_version = ">= 1.0.0"\n}\n')
    elif edit == "provider block":
        (tf / "providers.tf").write_text('provider "terraform" {\n}\n')
    else:
        (tf / ".terraform.lock.hcl").write_text("# This file is maintained automatically\n")
    assert early.start_plan("lab", str(project))  # from the last plan's record
    doc, steps = _steps(project)
    assert steps[:1] == ["init"], (steps, doc)  # stopped before init ran
    assert not early.pending(tf) and _leftovers(pdir) == []
    assert json.loads(doc)["status"] == "ready"


def test_the_record_a_plan_leaves_is_what_starts_the_next_ahead(
    terraform_binary: str, project: Path
) -> None:
    pdir = _planned(project)
    record = pdir / "terraform" / early.AHEAD_FILE
    kept = json.loads(record.read_text())
    assert kept["binary"] == terraform_binary and kept["tf"] == str(record.parent.resolve())
    record.unlink()
    assert not early.start_plan("lab", str(project))  # the first plan starts nothing ahead
    assert plan("lab", dream_dir=str(project)).status == "ready"
    assert json.loads(record.read_text()) == kept
    stat = record.stat()
    assert plan("lab", dream_dir=str(project)).status == "ready"
    assert record.stat().st_mtime_ns == stat.st_mtime_ns  # unchanged: not written again
    record.write_text(json.dumps({**kept, "binaryFile": [0, 0]}))  # another binary file
    assert not early.start_plan("lab", str(project))
    record.write_text("{not json")
    assert not early.start_plan("lab", str(project))


def test_other_settings_start_nothing_ahead(
    terraform_binary: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The endpoints and the plugin mirror come from variables and files the record
    does not hold: any change there, and the plan is not started from the record."""
    pdir = _planned(project)
    assert early.start_plan("lab", str(project))
    early.settle()
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    assert not early.start_plan("lab", str(project))
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    (project / ".dreamrc").write_text("{}\n")  # a settings file the search now finds
    assert not early.start_plan("lab", str(project))
    (project / ".dreamrc").unlink()
    assert early.start_plan("lab", str(project))
    early.settle()
    assert _leftovers(pdir) == []


FLAGS = {
    "flag": "../x",
    "flag .dream": "~/p/.dream",
    "flag spelled loosely": ".//x/./y/",
    "flag .dream/": "./../x/.dream/",
    "flag absolute": "/",
    "flag //": "//x/.dream",
    "flag .": ".",
}


@pytest.mark.parametrize("where", [*FLAGS, "dreamrc above", "cwd"])
def test_the_root_is_chosen_as_the_verbs_choose_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """The same folder, spelled the same: the provider's settings files are named
    after it in the ahead record the engine writes (``provider_settings``)."""
    from dreamlake.engine.world.paths import find_root

    top = tmp_path / "top"
    (top / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(top / "a" / "b")
    if where == "dreamrc above":
        (top / ".dreamrc").write_text("{}\n")
    dream_dir = FLAGS.get(where)
    root = find_root(dream_dir).path
    assert early.project_root(dream_dir) == str(root)
    pdir = root / ".dream/providers/lab"
    assert early.provider_settings(str(pdir)) == early.provider_settings(pdir)


@pytest.mark.parametrize(
    "name", ["lab", "a-1", "0", "x" * 63, "x" * 64, "", "-lab", "Lab", "la_b", "la b", "../x"]
)
def test_a_name_is_a_provider_name_as_the_verbs_check_it(name: str) -> None:
    from dreamlake.engine.contract.errors import UsageError
    from dreamlake.engine.world.paths import check_name

    try:
        check_name(name)
        valid = True
    except UsageError:
        valid = False
    assert early.is_name(name) is valid


def test_nothing_starts_ahead_over_a_run_in_flight_or_a_missing_binary(
    terraform_binary: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdir = _planned(project)
    tf = pdir / "terraform"
    lock = tf / ".terraform.tfstate.lock.info"
    lock.write_text(json.dumps({"ID": "x", "Operation": "OperationTypeApply"}))
    assert not early.start_plan("lab", str(project))
    lock.unlink()
    with recording(pdir, "apply", yes=True, step="provision"):
        assert not early.start_plan("lab", str(project))
    monkeypatch.setenv("TERRAFORM_BINARY", str(project / "no-such-terraform"))
    assert not early.start_plan("lab", str(project))  # the plan verb says what is wrong
    not_a_binary = project / "not-a-binary"
    not_a_binary.write_text("")
    not_a_binary.chmod(0o755)
    monkeypatch.setenv("TERRAFORM_BINARY", str(not_a_binary))
    assert not early.start_plan("lab", str(project))  # it cannot be started
    assert not early.start_plan("Not A Name", str(project))
    assert _leftovers(pdir) == []


def test_observing_under_a_plan_started_ahead_sees_no_other_run(
    terraform_binary: str, project: Path
) -> None:
    pdir = _planned(project)
    state = pdir / "terraform/terraform.tfstate"
    assert early.start_plan("lab", str(project))
    ahead = next(iter(early._PENDING.values()))
    deadline = time.monotonic() + 60
    while not early.owns(probe_fcntl(state).pid):  # its lock taken (by it or its child)
        if ahead.run.poll() is not None or time.monotonic() > deadline:
            pytest.skip("the plan ended before its lock was seen")
        time.sleep(0.001)
    infra = observe_state(pdir)
    assert infra.lock is None
    assert not any("plan is running" in n for n in infra.notes)


def test_a_binary_that_cannot_start_starts_nothing_and_the_plan_answers_as_today(
    terraform_binary: str, project: Path
) -> None:
    pdir = _planned(project)
    record = pdir / "terraform" / early.AHEAD_FILE
    plain = plan("lab", dream_dir=str(project)).to_json()
    broken = project / "broken-terraform"
    broken.write_bytes(b"\x7fELF not really\n")
    broken.chmod(0o755)
    st = broken.stat()
    kept = json.loads(record.read_text())
    record.write_text(
        json.dumps({**kept, "binary": str(broken), "binaryFile": [st.st_size, st.st_mtime_ns]})
    )
    assert not early.start_plan("lab", str(project))  # exec fails: nothing pending
    assert not early.pending(pdir / "terraform")
    assert plan("lab", dream_dir=str(project)).to_json() == plain


def test_a_ctrl_c_before_the_plan_takes_its_run_leaves_the_saved_plan(
    terraform_binary: str, project: Path
) -> None:
    """SIGINT to the dreamlake process after terraform's plan started ahead, before
    the backend took it: the plan is waited for (a Ctrl-C from a terminal reached it
    too: no second signal), never left running; its file is removed, the saved plan
    and the state are as they were, no lock is left; the one document is the
    interruption's, exit 1."""
    import os

    pdir = _planned(project)
    tf = pdir / "terraform"
    saved = (tf / "tfplan").read_bytes()
    said = project.parent / "started"
    argv = ["provider", "plan", "-n", "lab", "--json", "--dream-dir", str(project)]
    proc, out, err, pid = interrupted_after_start(
        "dreamlake.engine.backends.terraform.early", "start_plan", argv, project, said
    )
    doc = json.loads(out)
    assert proc.returncode == 1 and doc["kind"] == "interrupted", (doc, err)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # waited for: not running, not a zombie of nobody's
    assert _leftovers(pdir) == []
    assert (tf / "tfplan").read_bytes() == saved
    assert not (tf / ".terraform.tfstate.lock.info").exists()
    assert not (pdir / "intent.json").exists()
    assert status("lab", dream_dir=str(project)).status == "ready"
