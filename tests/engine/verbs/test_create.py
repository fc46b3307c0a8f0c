"""Every `create` row of the spec's verb × world table, with its exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dreamlake.engine.contract.result import EditThenContinue, Run
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.status import status


def _mtimes(d: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in sorted(d.rglob("*"))}


def _resolve_local(tfvars: Path) -> None:
    tfvars.write_text('workdir = "/tmp/nymph-work"\nqueues = ["cpu"]\nworker_name = "lab-box"\n')


def test_absent_dir_no_decisions_is_scaffolded(project: Path, own_templates: Path) -> None:
    r = create("bare1", "bare", dream_dir=str(project))
    assert r.status == "scaffolded" and r.exit_code == 0
    assert r.blocking == []
    assert isinstance(r.next_action, Run)
    assert r.next_action.command == f"dreamlake provider plan -n bare1 --dream-dir {project}"
    d = project / ".dream" / "providers" / "bare1"
    assert str(d / "provider.json") in (r.files or [])
    assert (d / "terraform" / "main.tf").is_file() and (d / "ADAPT.md").is_file()
    assert not (d / "TEMPLATE.json").exists()


def test_absent_dir_unresolved_is_needs_input(project: Path) -> None:
    r = create("lab", "local", cwd=project)
    assert r.status == "needs_input" and r.exit_code == 0
    d = project / ".dream" / "providers" / "lab"
    tfvars = d / "terraform" / "terraform.tfvars"
    assert {b.key for b in r.blocking or []} == {"workdir", "queues", "worker_name"}
    for b in r.blocking or []:
        assert b.file == str(tfvars) and b.line and b.why
    assert isinstance(r.next_action, EditThenContinue)
    assert r.next_action.file == str(tfvars)
    assert r.next_action.command == "dreamlake provider create -n lab --continue"
    assert r.dir == str(d)
    assert r.files and r.files[0] == str(d / "provider.json")
    assert str(project / ".dream" / ".gitignore") in r.files


def test_unknown_vendor_is_error_naming_known_vendors(project: Path) -> None:
    r = create("x", "nope", cwd=project)
    assert r.status == "error" and r.exit_code == 1
    assert r.kind == "unknown_vendor"
    for v in ("kube", "ec2", "gce", "local", "ssh"):
        assert v in (r.error or "")
    assert r.next_action is not None
    assert not (project / ".dream").exists()


def test_continue_after_resolving_is_scaffolded(project: Path) -> None:
    create("lab", "local", cwd=project)
    tfvars = project / ".dream/providers/lab/terraform/terraform.tfvars"
    _resolve_local(tfvars)
    r = create("lab", "local", continue_=True, cwd=project)
    assert r.status == "scaffolded" and r.exit_code == 0
    assert r.files == [] and r.blocking == []
    assert isinstance(r.next_action, Run) and r.next_action.command.endswith("plan -n lab")


def test_continue_still_unresolved_is_needs_input(project: Path) -> None:
    first = create("lab", "local", cwd=project)
    again = create("lab", "local", continue_=True, cwd=project)
    assert again.status == "needs_input" and again.exit_code == 0
    assert [b.key for b in again.blocking or []] == [b.key for b in first.blocking or []]
    assert again.files == []


def test_same_vendor_again_is_exists_and_moves_nothing(project: Path) -> None:
    first = create("lab", "local", cwd=project)
    before = _mtimes(project / ".dream")
    r = create("lab", "local", cwd=project)
    assert r.status == "exists" and r.exit_code == 0
    assert r.files == []
    assert _mtimes(project / ".dream") == before
    # still carries the scan's blocking and the next action the scan implies
    assert [b.key for b in r.blocking or []] == [b.key for b in first.blocking or []]
    assert isinstance(r.next_action, EditThenContinue)


def test_different_vendor_is_refused(project: Path) -> None:
    create("lab", "local", cwd=project)
    before = _mtimes(project / ".dream")
    r = create("lab", "ec2", cwd=project)
    assert r.status == "error" and r.exit_code == 1
    assert r.error == (
        "'lab' was scaffolded from vendor 'local'. Refusing to overwrite it with 'ec2' "
        "— delete the directory or pick another name."
    )
    assert r.next_action is not None
    assert _mtimes(project / ".dream") == before


def test_different_backend_is_refused(project: Path) -> None:
    create("lab", "local", cwd=project)
    r = create("lab", "local", backend="pulumi", cwd=project)
    assert r.status == "error" and r.kind == "vendor_mismatch"
    assert "Refusing to overwrite" in (r.error or "")


@pytest.mark.parametrize("bad", ["Lab", "-x", "a_b", "a/b", ""])
def test_bad_name_is_error(project: Path, bad: str) -> None:
    r = create(bad, "local", cwd=project)
    assert r.status == "error" and r.kind == "usage" and r.exit_code == 1
    assert r.next_action is not None
    assert not (project / ".dream").exists()


def test_provider_json_is_identity_and_provenance_only(project: Path) -> None:
    create("lab", "local", cwd=project)
    data = json.loads((project / ".dream/providers/lab/provider.json").read_text())
    assert data["name"] == "lab" and data["vendor"] == "local" and data["backend"] == "terraform"
    assert data["templateVersion"] == 2 and data["engineVersion"] and data["createdAt"]
    assert "status" not in data and "phase" not in data


def test_gitignore_written_once_and_never_overwritten(project: Path) -> None:
    create("a", "local", cwd=project)
    gi = project / ".dream" / ".gitignore"
    text = gi.read_text()
    for pattern in (
        "providers/*/terraform/.terraform/",
        "providers/*/terraform/terraform.tfstate*",
        "providers/*/terraform/*.tfplan",
        "providers/*/pulumi/.state/",
    ):
        assert pattern in text
    gi.write_text("# mine\n")
    r = create("b", "local", cwd=project)
    assert gi.read_text() == "# mine\n"
    assert str(gi) not in (r.files or [])


def test_dreamrc_root_and_dream_dir(tmp_path: Path) -> None:
    (tmp_path / ".dreamrc").write_text("{}\n")
    sub = tmp_path / "deep" / "er"
    sub.mkdir(parents=True)
    r = create("lab", "local", cwd=sub)
    assert r.dir == str(tmp_path / ".dream/providers/lab")
    other = tmp_path / "other"
    r2 = create("lab", "local", dream_dir=str(other), cwd=sub)
    assert r2.dir == str(other / ".dream/providers/lab")
    assert isinstance(r2.next_action, EditThenContinue)
    assert f"--dream-dir {other}" in r2.next_action.command


def test_unwritable_root_is_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    r = create("lab", "local", dream_dir=str(blocker))
    assert r.status == "error" and r.kind == "not_writable" and r.exit_code == 1
    assert r.next_action is not None


def test_foreign_dir_is_never_written_into(project: Path) -> None:
    d = project / ".dream/providers/lab"
    d.mkdir(parents=True)
    (d / "notes.txt").write_text("mine")
    r = create("lab", "local", cwd=project)
    assert r.status == "error" and r.kind == "dir_not_ours"
    assert sorted(p.name for p in d.iterdir()) == ["notes.txt"]


def test_no_partial_scaffold_left_behind(project: Path) -> None:
    create("lab", "local", cwd=project)
    leftovers = [p.name for p in (project / ".dream/providers").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_concurrent_creates_scaffold_exactly_once(project: Path) -> None:
    """N processes race to create one name: one scaffolds, the rest say exists."""
    code = (
        "import sys, json; from dreamlake.engine.verbs.create import create;"
        "r = create('race', 'local', dream_dir=sys.argv[1]);"
        "print(json.dumps({'status': r.status, 'files': r.files}))"
    )
    env = {**os.environ}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(project)],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        for _ in range(6)
    ]
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    wrote = [o for o in outs if o["files"]]
    assert len(wrote) == 1 and wrote[0]["status"] == "needs_input"
    assert all(o["status"] == "exists" and o["files"] == [] for o in outs if not o["files"])
    entries = sorted(p.name for p in (project / ".dream/providers").iterdir())
    assert entries == ["race"]


def test_status_first_form(project: Path) -> None:
    create("lab", "local", cwd=project)
    r = status("lab", cwd=project)
    assert r.status == "needs_input" and r.files is None
    assert r.template is not None and r.template.version == r.template.latest == 2
    assert "no-lakeshore" in (r.degraded or [])


def test_status_unknown_provider_names_root_and_providers(project: Path) -> None:
    create("lab", "local", cwd=project)
    r = status("nope", cwd=project)
    assert r.status == "error" and r.exit_code == 1 and r.kind == "unknown_provider"
    assert str(project / ".dream" / "providers") in (r.error or "") and "lab" in (r.error or "")
    # The message lists what exists; the next action keeps the name asked for.
    assert isinstance(r.next_action, Run)
    assert r.next_action.command == "dreamlake provider create -n nope --help"


def test_status_unknown_provider_next_action_keeps_dream_dir(project: Path) -> None:
    r = status("nope", dream_dir=str(project))
    assert isinstance(r.next_action, Run)
    assert r.next_action.command.endswith(f"--dream-dir {project}")
    create("lab", "local", dream_dir=str(project))
    r = status("nope", dream_dir=str(project))
    assert isinstance(r.next_action, Run)
    assert (
        r.next_action.command == f"dreamlake provider create -n nope --help --dream-dir {project}"
    )


@pytest.mark.parametrize("name", ["x/../lab", "..", "Lab", ""])
def test_status_refuses_a_name_that_is_not_a_name(project: Path, name: str) -> None:
    """A name is a folder under .dream/providers: 'x/../lab' must not report 'lab'."""
    create("lab", "local", cwd=project)
    r = status(name, cwd=project)
    assert (r.status, r.kind, r.exit_code) == ("error", "usage", 1)
    assert r.next_action == Run(command="dreamlake provider create --help") and r.dir is None


def test_a_bad_name_never_reaches_a_next_action_command(project: Path) -> None:
    """An agent runs .command in a shell: a name that failed validation is not in it."""
    from dreamlake.engine.verbs.apply import apply
    from dreamlake.engine.verbs.plan import plan

    bad = "x; touch pwned"
    for r in (status(bad, cwd=project), plan(bad, cwd=project), apply(bad, cwd=project)):
        assert (r.status, r.kind) == ("error", "usage")
        assert r.next_action is not None and "pwned" not in r.next_action.command
        assert r.next_action.command == "dreamlake provider create --help"


def test_a_broken_provider_json_points_at_itself(project: Path) -> None:
    """Not 'run status' again (the same error): fix the file, then look again."""
    create("lab", "local", dream_dir=str(project))
    pj = project / ".dream/providers/lab/provider.json"
    pj.write_text("{oops")
    for r in (status("lab", dream_dir=str(project)), create("lab", dream_dir=str(project))):
        assert (r.status, r.kind, r.exit_code) == ("error", "bad_record", 1)
        assert r.next_action == EditThenContinue(
            file=str(pj), command=f"dreamlake provider status -n lab --dream-dir {project}"
        )


def test_status_reports_newer_template(project: Path, own_templates: Path) -> None:
    create("b", "bare", cwd=project)
    pj = project / ".dream/providers/b/provider.json"
    data = json.loads(pj.read_text())
    data["templateVersion"] = 1
    pj.write_text(json.dumps(data))
    r = status("b", cwd=project)
    assert r.template is not None and (r.template.version, r.template.latest) == (1, 2)
    assert any("template: bare v1 (v2 available)" in n for n in r.notes)


def test_continue_needs_no_provider_flag(project: Path) -> None:
    create("lab", "local", cwd=project)
    _resolve_local(project / ".dream/providers/lab/terraform/terraform.tfvars")
    r = create("lab", None, continue_=True, cwd=project)
    assert r.status == "scaffolded" and r.vendor == "local"


def test_continue_keeps_the_recorded_backend(project: Path) -> None:
    create("pl", "local", backend="pulumi", cwd=project)
    r = create("pl", None, continue_=True, cwd=project)
    assert r.status in ("needs_input", "scaffolded"), r.error
    r = create("pl", "local", continue_=True, cwd=project)
    assert r.status in ("needs_input", "scaffolded"), r.error


def test_new_provider_without_vendor_is_usage_error(project: Path) -> None:
    r = create("fresh", None, cwd=project)
    assert r.status == "error" and r.kind == "usage" and r.exit_code == 1
    assert isinstance(r.next_action, Run)
    assert r.next_action.command == "dreamlake provider create -n fresh --help"


def test_tfvars_syntax_error_is_error_with_edit_action_carrying_dream_dir(tmp_path: Path) -> None:
    dd = str(tmp_path / "dd")
    create("lab", "local", dream_dir=dd)
    tfvars = tmp_path / "dd/.dream/providers/lab/terraform/terraform.tfvars"
    tfvars.write_text('workdir = "/tmp/x"\nqueues = [\n')
    r = create("lab", None, continue_=True, dream_dir=dd)
    assert r.status == "error" and r.exit_code == 1
    assert isinstance(r.next_action, EditThenContinue)
    assert r.next_action.file == str(tfvars)
    assert r.next_action.command == f"dreamlake provider create -n lab --continue --dream-dir {dd}"
    s = status("lab", dream_dir=dd)
    assert s.status == "error" and isinstance(s.next_action, EditThenContinue)
