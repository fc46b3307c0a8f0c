"""The conventions users of typer/click, Terraform and Pulumi expect, on the real
`dreamlake`, `lakeshore` and `nymph` commands, each run as a process of its own:
forked from a server that has the imports done (``tests/cli_fork.py``), and started
from scratch for the version of each command, shell completion and the stdout/stderr
split."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_module
from dreamlake.engine.backends.terraform.binaries import available

import dreamlake

BIN = Path(sys.executable).parent
COMMANDS = {
    "dreamlake": [sys.executable, "-m", "dreamlake.cli.main"],
    "lakeshore": [sys.executable, "-m", "dreamlake.cli.lakeshore.app"],
    "nymph": [sys.executable, "-m", "dreamlake.controlplane.nymph.main"],
}


def run(
    prog: str,
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    fork: bool = True,
) -> subprocess.CompletedProcess[str]:
    if fork:
        return run_module(
            COMMANDS[prog][-1], args, cwd=cwd, stdin=subprocess.DEVNULL, text=True,
            timeout=120, env={**os.environ, **(env or {})},
        )  # fmt: skip
    return subprocess.run(
        [*COMMANDS[prog], *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("prog", sorted(COMMANDS))
def test_version(prog: str) -> None:
    p = run(prog, "--version", fork=False)
    assert p.returncode == 0 and p.stdout.strip() == f"{prog} {dreamlake.__version__}"


@pytest.mark.parametrize(
    "argv",
    [
        ["dreamlake", "-h"],
        ["dreamlake", "provider", "-h"],
        ["dreamlake", "provider", "status", "-h"],
        ["lakeshore", "-h"],
        ["lakeshore", "providers", "add", "-h"],
        ["nymph", "-h"],
    ],
    ids=lambda a: " ".join(a),
)
def test_dash_h_is_help(argv: list[str]) -> None:
    p = run(argv[0], *argv[1:])
    assert p.returncode == 0 and "Usage:" in p.stdout.replace("usage:", "Usage:"), p.stderr


@pytest.mark.parametrize(
    "argv",
    [["dreamlake", "provider", "status", "-h"], ["lakeshore", "providers", "add", "-h"]],
    ids=["dreamlake", "lakeshore"],
)
def test_help_shows_regexes_as_written(argv: list[str]) -> None:
    p = run(argv[0], *argv[1:])
    assert "^[a-z0-9][a-z0-9-]*$" in p.stdout and "(^*$)" not in p.stdout


def test_options_that_read_the_environment_say_so() -> None:
    text = " ".join(run("lakeshore", "namespaces", "list", "-h").stdout.split())
    assert "[env var: LAKESHORE_URL]" in text
    text = " ".join(run("lakeshore", "serve", "-h").stdout.split())
    for var in ("LAKESHORE_DB", "LAKESHORE_LOG_FORMAT", "LAKESHORE_ACCESS_LOG"):
        assert f"env var: {var}" in text
    text = " ".join(run("nymph", "-h").stdout.split())
    for var in ("LAKESHORE_URL", "LAKESHORE_NAMESPACE", "NYMPH_INSTANCE_ID", "NYMPH_LOG_FORMAT"):
        assert f"env var: {var}" in text


@pytest.mark.parametrize("prog", ["dreamlake", "lakeshore"])
def test_shell_completion(prog: str) -> None:
    assert "--install-completion" in run(prog, "-h").stdout
    env = {
        f"_{prog.upper()}_COMPLETE": "complete_bash",
        "COMP_WORDS": f"{prog} prov",
        "COMP_CWORD": "1",
    }
    p = subprocess.run(
        [str(BIN / prog)], env={**os.environ, **env}, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0 and "providers" in p.stdout.split()


def test_nymph_takes_no_flag_prefixes() -> None:
    """--name is not --namespace, --queue is not --queues: unknown flags are errors."""
    for flag in (["--name", "x"], ["--queue", "gpu"], ["--prov", "x"]):
        p = run("nymph", "--server", "http://127.0.0.1:9", "--provider", "p", *flag)
        assert p.returncode == 2 and "unrecognized arguments" in p.stderr, (flag, p.stderr)


@pytest.fixture
def planned_env(project: Path) -> dict[str, str]:
    if not available():
        pytest.skip("needs a terraform binary")
    p = run("dreamlake", "provider", "create", "-n", "vb", "--provider", "local", cwd=project)
    assert p.returncode == 0, p.stderr
    (project / ".dream/providers/vb/terraform/terraform.tfvars").write_text(
        f'workdir = "{project}/w"\nqueues = ["a"]\nworker_name = "vb-box"\n'
    )
    return {"TF_CLI_CONFIG_FILE": os.devnull}


def test_verbose_shows_subprocess_lines_and_timing(project: Path, planned_env: dict) -> None:  # type: ignore[type-arg]
    p = run("dreamlake", "--verbose", "provider", "plan", "-n", "vb", "--json", cwd=project,
            env=planned_env)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert '"status": "ready"' in p.stdout  # stdout stays the one JSON document
    runs = [x for x in p.stderr.splitlines() if x.startswith("dreamlake: run: ")]
    assert any(" plan " in x and "(in " in x for x in runs), p.stderr
    assert any(x.startswith("dreamlake: done in ") and "exit " in x for x in p.stderr.splitlines())
    p = run("dreamlake", "provider", "status", "-n", "vb", "--json", cwd=project,
            env={**planned_env, "DREAMLAKE_LOG": "debug"})  # fmt: skip
    q = run("dreamlake", "provider", "status", "-n", "vb", "--json", cwd=project, env=planned_env)
    assert q.stderr == "" and p.stdout == q.stdout


def test_tf_log_passes_through(project: Path, planned_env: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    log = tmp_path / "tf.log"
    env = {**planned_env, "TF_LOG": "debug", "TF_LOG_PATH": str(log)}
    p = run("dreamlake", "provider", "plan", "-n", "vb", "--json", cwd=project, env=env)
    assert p.returncode == 0, p.stderr
    assert log.is_file() and "[DEBUG]" in log.read_text()


def test_verbose_works_after_the_subcommand_too(project: Path, planned_env: dict) -> None:  # type: ignore[type-arg]
    p = run("dreamlake", "provider", "plan", "vb", "--json", "--verbose", cwd=project,
            env=planned_env)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert '"status": "ready"' in p.stdout
    assert any(x.startswith("dreamlake: run: ") for x in p.stderr.splitlines()), p.stderr


def test_hoisting_verbose_leaves_arguments_after_the_separator_alone() -> None:
    from dreamlake.cli.main import hoist_verbose

    assert hoist_verbose(["provider", "status", "-n", "a", "--verbose"]) == [
        "--verbose", "provider", "status", "-n", "a",
    ]  # fmt: skip
    assert hoist_verbose(["provider", "set", "a", "--", "--verbose"]) == [
        "provider", "set", "a", "--", "--verbose",
    ]  # fmt: skip


PROVIDER_VERBS = [
    "create", "status", "plan", "drift", "apply", "connect", "set", "suspend", "resume",
    "reconcile", "destroy", "delete", "show", "update",
]  # fmt: skip


@pytest.mark.parametrize("verb", PROVIDER_VERBS)
def test_every_provider_verb_takes_the_name_both_ways(verb: str) -> None:
    """`-n NAME` and a bare NAME on every `provider` verb; -y is --yes wherever --yes is."""
    p = run("dreamlake", "provider", verb, "--help")
    assert p.returncode == 0, p.stderr
    assert "[NAME" in p.stdout.splitlines()[0] and "-n, --name" in p.stdout, p.stdout
    if "--yes" in p.stdout:
        assert "-y, --yes" in p.stdout


def test_a_positional_name_and_y_reach_the_verb(project: Path) -> None:
    p = run("dreamlake", "provider", "create", "lab", "--provider", "local", "--json", cwd=project)
    assert p.returncode == 0, p.stderr
    p = run("dreamlake", "provider", "status", "lab", "--json", cwd=project)
    assert p.returncode == 0 and '"provider": "lab"' in p.stdout
    p = run("dreamlake", "provider", "status", "lab", "-n", "other", cwd=project)
    assert p.returncode == 1 and "two names given" in p.stderr
    p = run("dreamlake", "provider", "delete", "lab", "-y", "--json", cwd=project)
    assert p.returncode == 0 and not (project / ".dream" / "providers" / "lab").exists()


def test_prose_errors_go_to_stderr_and_json_errors_to_stdout(project: Path) -> None:
    p = run("dreamlake", "provider", "status", "-n", "nope", cwd=project, fork=False)
    assert p.returncode == 1
    assert "✗" in p.stderr and "next: " in p.stderr and "✗" not in p.stdout
    p = run("dreamlake", "provider", "status", "-n", "nope", "--json", cwd=project, fork=False)
    assert p.returncode == 1 and p.stdout.lstrip().startswith("{") and p.stderr == ""


def test_one_json_error_shape_across_the_commands(project: Path) -> None:
    """error (a sentence), kind (a word), nextAction (an object or null)."""
    import json

    docs = [
        run("dreamlake", "provider", "status", "-n", "nope", "--json", cwd=project),
        run("dreamlake", "provider", "status", "--bogus", "--json", cwd=project),
        run("dreamlake", "provider", "show", "--json", cwd=project),
        run("lakeshore", "namespaces", "list", "--server", "http://127.0.0.1:9", "--json",
            cwd=project),
    ]  # fmt: skip
    for p in docs:
        assert p.returncode == 1, (p.stdout, p.stderr)
        doc = json.loads(p.stdout)
        assert isinstance(doc["error"], str) and isinstance(doc["kind"], str), doc
        assert doc["nextAction"] is None or isinstance(doc["nextAction"]["command"], str), doc
