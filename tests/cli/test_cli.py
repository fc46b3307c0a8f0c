"""The real `dreamlake` command as a subprocess, stdin closed: prose and JSON modes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_module

DREAMLAKE = [sys.executable, "-m", "dreamlake.cli.main"]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m dreamlake.cli.main ARGS`` forked from a server with the imports
    done (``tests/cli_fork.py``): a process of its own, as a subprocess is."""
    return run_module(
        DREAMLAKE[-1], args, cwd=cwd, stdin=subprocess.DEVNULL, text=True, timeout=120,
        env=os.environ.copy(),
    )  # fmt: skip


def test_json_mode_prints_one_document_only(project: Path) -> None:
    p = run("provider", "create", "-n", "lab", "--provider", "local", "--json", cwd=project)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # the whole stdout is one JSON document
    assert doc["status"] == "needs_input"
    assert doc["nextAction"]["kind"] == "edit_then_continue"
    assert doc["server"] and doc["namespace"]


def test_prose_prints_root_first_then_state_and_next(project: Path) -> None:
    p = run("provider", "create", "-n", "lab", "--provider", "local", cwd=project)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "provider create lab"
    assert lines[1] == f"root: {project} (cwd)"
    assert "✓ scaffolded .dream/providers/lab/terraform/" in p.stdout
    assert "⚠ needs decisions before it can apply:" in p.stdout
    assert "   · worker name — still the template's placeholder" in p.stdout
    assert lines[-1] == (
        "next: edit .dream/providers/lab/terraform/terraform.tfvars, "
        "then dreamlake provider create -n lab --continue"
    )


def test_exists_prose_and_rc(project: Path) -> None:
    run("provider", "create", "-n", "lab", "--provider", "local", cwd=project)
    p = run("provider", "create", "-n", "lab", "--provider", "local", cwd=project)
    assert p.returncode == 0
    assert (
        "⚠ .dream/providers/lab/ already exists from vendor 'local' — nothing was overwritten"
        in p.stdout
    )
    assert p.stdout.count("nothing was overwritten") == 1, p.stdout


def test_refusal_prose_and_rc(project: Path) -> None:
    run("provider", "create", "-n", "lab", "--provider", "local", cwd=project)
    p = run("provider", "create", "-n", "lab", "--provider", "ec2", cwd=project)
    assert p.returncode == 1
    assert (
        "✗ 'lab' was scaffolded from vendor 'local'. Refusing to overwrite it with 'ec2' "
        "— delete the directory or pick another name." in p.stderr
    )
    # the error goes to stderr; stdout keeps only what ran (the header), no ✗ line
    assert "✗" not in p.stdout and p.stdout.startswith("provider create lab\n")


def test_unknown_vendor_rc1_json(project: Path) -> None:
    p = run("provider", "create", "-n", "x", "--provider", "nope", "--json", cwd=project)
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["status"] == "error" and doc["nextAction"]["kind"] == "run"


def test_bad_flags_rc1_with_next_action(project: Path) -> None:
    p = run("provider", "create", "--bogus", "--json", cwd=project)
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["status"] == "error" and doc["kind"] == "usage" and doc["nextAction"]
    p = run("provider", "create", "--provider", "local", cwd=project)  # -n missing
    assert p.returncode == 1 and "next:" in p.stderr


def test_status_unknown_provider(project: Path) -> None:
    p = run("provider", "status", "-n", "ghost", "--json", cwd=project)
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["kind"] == "unknown_provider" and str(project) in doc["error"]


def test_schema_command_prints_the_contract(project: Path) -> None:
    p = run("schema", cwd=project)
    assert p.returncode == 0
    schema = json.loads(p.stdout)
    assert "nextAction" in schema["required"]


def test_continue_as_printed_in_next_action_runs(project: Path) -> None:
    """The nextAction command is run verbatim, as an agent would."""
    doc = json.loads(
        run("provider", "create", "-n", "lab", "--provider", "local", "--json", cwd=project).stdout
    )
    Path(doc["nextAction"]["file"]).write_text(
        'workdir = "/tmp/w"\nqueues = ["cpu"]\nworker_name = "box"\n'
    )
    argv = doc["nextAction"]["command"].split()
    assert argv[:2] == ["dreamlake", "provider"]
    p = run(*argv[1:], "--json", cwd=project)
    assert p.returncode == 0, p.stdout
    assert json.loads(p.stdout)["status"] == "scaffolded"
    p = run(*argv[1:], cwd=project)  # the spec's scaffolded prose, nothing written
    assert p.stdout.splitlines()[-3:] == [
        "✓ scaffolded .dream/providers/lab/terraform/",
        "every decision in this template has a value.",
        "next: dreamlake provider plan -n lab",
    ], p.stdout


def test_providers_from_dreamrc_without_a_round_trip(project: Path) -> None:
    (project / ".dreamrc").write_text(
        "providers:\n  lab: !providers.SSH\n    host: lab.internal\n    user: ops\n"
        "  aws: !providers.EC2\n    region: us-east-1\n"
    )
    p = run("providers", "--json", cwd=project)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["source"] == "cwd" and doc["path"] == str(project / ".dreamrc")
    by_name = {d["name"]: d for d in doc["providers"]}
    assert (
        by_name["lab"]["launcher"] == "SSH" and by_name["lab"]["kwargs"]["host"] == "lab.internal"
    )
    assert by_name["aws"]["dispatch"] == "daemon"
    p = run("providers", "lab", cwd=project)
    assert p.returncode == 0 and p.stdout.splitlines()[1].startswith("lab  SSH  direct")
    p = run("providers", "ghost", "--json", cwd=project)
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["kind"] == "unknown_provider"
    assert doc["nextAction"] == {"kind": "run", "command": "dreamlake providers"}
    p = run("providers", "ghost", cwd=project)
    assert p.returncode == 1 and p.stderr.splitlines()[-1] == "next: dreamlake providers"


def test_providers_bad_tag_is_error_with_line(project: Path) -> None:
    (project / ".dreamrc").write_text("providers:\n  x: !providers.Nope\n    a: 1\n")
    p = run("providers", cwd=project)
    assert p.returncode == 1
    assert f"{project / '.dreamrc'}:2" in p.stderr
    assert f"next: edit {project / '.dreamrc'}, then dreamlake providers" in p.stderr


def test_an_unexpected_failure_is_one_error_document_keeping_dream_dir(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dreamlake.cli.main import main
    from dreamlake.engine.verbs import status as status_mod

    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(status_mod, "status", boom)
    rc = main(["provider", "status", "-n", "lab", "--dream-dir", str(project), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1 and doc["status"] == "error" and doc["kind"] == "internal"
    assert "disk on fire" in doc["error"] and doc["root"] == str(project)
    assert doc["nextAction"] == {
        "kind": "run",
        "command": f"dreamlake provider status -n lab --dream-dir {project}",
    }


def test_interrupt_in_json_mode_still_prints_one_document(project: Path) -> None:
    """SIGINT while a verb runs: rc 1 and a JSON error whose next action is status."""
    import signal
    import time

    code = (
        "import sys, time, dreamlake.engine.verbs.status as s;"
        "s.status = lambda *a, **k: (print('in the verb', file=sys.stderr, flush=True),"
        " time.sleep(60));"
        "from dreamlake.cli.main import main; raise SystemExit(main())"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, "provider", "status", "-n", "lab", "--json"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a suite started in the background (no job control)
        # passes SIGINT on ignored, and Python then leaves it ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # the signal once the verb runs (not after a fixed wait, which a loaded machine outlasts)
    assert p.stderr is not None
    deadline = time.monotonic() + 60
    while p.stderr.readline().strip() != "in the verb":
        assert time.monotonic() < deadline and p.poll() is None, "the verb never started"
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 1
    doc = json.loads(out)
    assert doc["kind"] == "interrupted"
    assert doc["nextAction"] == {"kind": "run", "command": "dreamlake provider status -n lab"}
